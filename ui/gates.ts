/**
 * A pending approval gate with what a person needs to decide it: the gated TOOL_CALL (tool,
 * arguments, idempotency key), when it was requested, by which harness, and its deadline. The
 * deadline is not a field of the journal: the host writes it into the request's reason ("…; denied
 * automatically after <ISO time>", docs/tools.md "Deadlines"), which is where this reads it from.
 * Pure; tested in test/node/ui/gates.test.ts.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { ApprovalRef, LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { msOf } from "./format.js";

export interface GateDetails {
  executionId: string;
  toolCallId: string;
  requestSeq: bigint;
  /** Undefined when the TOOL_CALL record was not among the records given. */
  tool?: string;
  args?: JsonObject;
  idempotencyKey?: string;
  callSeq?: bigint;
  /** The harness that made the call (from its EXECUTION_START, when given). */
  harness?: string;
  reason: string;
  requestedAtMs?: number;
  deadlineMs?: number;
}

const DEADLINE = /denied automatically after (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)/;

export function deadlineFromReason(reason: string): number | undefined {
  const m = DEADLINE.exec(reason);
  if (!m) return undefined;
  const ms = Date.parse(m[1]!);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The gate `ref` names, read from records that include its APPROVAL_REQUEST and the TOOL_CALL before it. */
export function gateDetails(ref: ApprovalRef, records: readonly LogRecord[]): GateDetails {
  const out: GateDetails = { executionId: ref.executionId, toolCallId: ref.toolCallId, requestSeq: ref.requestSeq, reason: "" };
  const request = records.find((r) => r.seq === ref.requestSeq);
  if (request?.event?.body.case === "approval") {
    out.reason = request.event.body.value.reason;
    out.requestedAtMs = msOf(request.event.ts);
    out.deadlineMs = deadlineFromReason(out.reason);
  }
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!;
    const ev = r.event;
    if (ev?.executionId === ref.executionId && ev.body.case === "executionStart") out.harness ??= ev.body.value.harness;
    if (out.tool !== undefined) continue;
    if (r.seq > ref.requestSeq || ev?.executionId !== ref.executionId || ev.body.case !== "tool" || ev.body.value.id !== ref.toolCallId) continue;
    out.tool = ev.body.value.tool;
    out.args = ev.body.value.args;
    out.idempotencyKey = ev.body.value.idempotencyKey;
    out.callSeq = r.seq;
    out.requestedAtMs ??= msOf(ev.ts);
  }
  return out;
}
