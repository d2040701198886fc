/**
 * Journal records for the UI's unit tests, written the way the host writes them (execution ids,
 * lifecycle markers without one) with optional times, so the models can be checked offline.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Event, EventKind, EventSchema, type LogRecord, LogRecordSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";

export type EventInit = Parameters<typeof create<typeof EventSchema>>[1];

/** Records seq 1.. for `events`; `times[i]` (ms) stamps Event.ts when given. */
export function journal(events: EventInit[], times: Array<number | undefined> = [], hashPrefix = "h"): LogRecord[] {
  return events.map((e, i) => {
    const at = times[i];
    const event: Event = create(EventSchema, { ...e, ts: at === undefined ? undefined : timestampFromMs(at) });
    return create(LogRecordSchema, { seq: BigInt(i + 1), prevHash: i ? `${hashPrefix}${i}` : "", contentHash: `${hashPrefix}${i + 1}`, event });
  });
}

export const ev = {
  start: (x: string, harness = "chat"): EventInit => ({
    executionId: x,
    kind: EventKind.EVENT_EXECUTION_START,
    body: { case: "executionStart", value: { harness, inputCount: 1n } },
  }),
  input: (x: string, text: string): EventInit => ({
    executionId: x,
    kind: EventKind.EVENT_INPUT,
    body: { case: "message", value: { role: "user", parts: [{ part: { case: "text", value: { text } } }] } },
  }),
  output: (x: string, text: string): EventInit => ({
    executionId: x,
    kind: EventKind.EVENT_OUTPUT,
    body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text } } }] } },
  }),
  model: (x: string, model = "m"): EventInit => ({ executionId: x, kind: EventKind.EVENT_MODEL_CALL, body: { case: "model", value: { model, id: "mc" } } }),
  usage: (x: string, input: bigint, output: bigint, reasoning = 0n): EventInit => ({
    executionId: x,
    kind: EventKind.EVENT_USAGE,
    body: { case: "usage", value: { model: "m", inputTokens: input, outputTokens: output, reasoningTokens: reasoning } },
  }),
  tool: (x: string, id: string, tool: string, args: Record<string, unknown>): EventInit => ({
    executionId: x,
    kind: EventKind.EVENT_TOOL_CALL,
    body: { case: "tool", value: { id, tool, args: args as never, mediation: 3, idempotencyKey: `${x}/${id}` } },
  }),
  request: (x: string, id: string, reason = ""): EventInit => ({
    executionId: x,
    kind: EventKind.EVENT_APPROVAL_REQUEST,
    body: { case: "approval", value: { toolCallId: id, reason } },
  }),
  decision: (x: string, id: string, approved: boolean, requestSeq: bigint): EventInit => ({
    executionId: x,
    kind: EventKind.EVENT_APPROVAL_RESULT,
    body: { case: "approvalResult", value: { toolCallId: id, approved, requestSeq } },
  }),
  result: (x: string, id: string): EventInit => ({ executionId: x, kind: EventKind.EVENT_TOOL_RESULT, body: { case: "result", value: { id } } }),
  end: (x: string, state = "COMPLETED"): EventInit => ({ executionId: x, kind: EventKind.EVENT_END, body: { case: "end", value: { state } } }),
  error: (x: string, code: number, description: string): EventInit => ({
    executionId: x,
    kind: EventKind.EVENT_ERROR,
    body: { case: "error", value: { code, description } },
  }),
  lifecycle: (kind: number, detail = ""): EventInit => ({ kind: EventKind.EVENT_LIFECYCLE, body: { case: "lifecycle", value: { kind, detail } } }),
};
