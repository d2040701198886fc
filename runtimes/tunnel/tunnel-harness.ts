/**
 * A harness that runs in someone else's process and dialed in over the tunnel (docs/tunnel.md),
 * seen by the controller as an ordinary Harness. `run` opens one stream (one Harness.Connect call),
 * sends Start, and turns each Event the harness sends into a call on the controller's own sink (live,
 * replay or resume: unchanged), answering model and tool calls with ControllerFrames. So mediation,
 * record-before-effect and determinism hold across the process boundary exactly as in process.
 * Plain TypeScript: the SessionObject supplies the channel; tests use an in-process one.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  ApprovalRefSchema,
  EventKind,
  ToolResultSchema,
  type ApprovalResult,
  type Event,
  type ToolResult,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import {
  ControllerFrameSchema,
  ModelResultSchema,
  StartSchema,
  type ControllerFrame,
  type HarnessDescriptor,
} from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { randomHex } from "../../proto/ids.js";
import { clipText, textOf } from "../../proto/messages.js";
import { isCompactionRequest } from "../compaction.js";
import type { EventSink, Harness, HarnessStart } from "../harness-spi.js";
import type { Delivery, StreamInbox } from "./inbox.js";

export interface TunnelChannel {
  /**
   * A live Describe through a connected harness: its descriptor, its error answer (`answered`, the
   * harness's own text), or undefined when none answers (not connected, disconnected, timed out).
   */
  describe(signal?: AbortSignal): Promise<HarnessDescriptor | { answered: string } | undefined>;
  /** Opens a stream on a connection that may serve this session. */
  open(stream: string): Promise<{ ok: true } | { ok: false; reason: string }>;
  /** Sends one frame of a stream; false when its connection is gone. */
  send(stream: string, frame: ControllerFrame): Promise<boolean>;
  /** Tells the harness to stop the stream (StreamClose) and forgets it. */
  close(stream: string, reason: string): Promise<void>;
  /** Forgets a stream the harness has finished (an accepted park) without telling it; absent when the channel keeps nothing per stream. */
  forget?(stream: string): Promise<void>;
}

/** The approval a park names, and its ack must name back. */
type ParkRef = { executionId: string; toolCallId: string; requestSeq: bigint };

/** The decision behind a gate's receipt, which the wire sends just before the receipt. */
export type DecisionOf = (receipt: ToolResult) => ApprovalResult | undefined;

/** How long the host waits for a parked harness to acknowledge (EVENT_PARKED). */
export const PARK_ACK_TIMEOUT_MS = 10_000;

/** The harness's failure over the wire, or a broken protocol: the execution fails (ERROR). */
export class TunnelHarnessError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TunnelHarnessError";
  }
}

export function createTunnelHarness(o: {
  name: string;
  channel: TunnelChannel;
  inbox: StreamInbox;
  decisionOf: DecisionOf;
  isPark: (e: unknown) => e is Error & { ref: ParkRef };
}): Harness {
  return {
    async describe(signal) {
      const d = await o.channel.describe(signal);
      if (!d) throw new TunnelHarnessError(`no harness named ${o.name} is connected (start one with: agentctl harness serve FILE --name ${o.name})`);
      // Connected and answering, with an error: not unavailable (checklist §8.16 #150). The answer is
      // only the harness's text, so its code is unknown; admission maps it to INTERNAL.
      if ("answered" in d) throw new ConnectError(`harness ${o.name} answered Describe with an error: ${d.answered}`, Code.Unknown);
      return d;
    },
    run: (start, sink) => runStream(o, start, sink),
  };
}

async function runStream(o: Parameters<typeof createTunnelHarness>[0], start: HarnessStart, sink: EventSink): Promise<void> {
  const stream = randomHex(12);
  const inbox = o.inbox.register(stream);
  let open = false;
  const frame = (f: ControllerFrame["frame"]) => create(ControllerFrameSchema, { session: start.sessionUid, executionId: start.executionId, frame: f });
  const send = async (f: ControllerFrame["frame"]) => {
    if (!(await o.channel.send(stream, frame(f)))) throw new TunnelHarnessError(`harness ${o.name} disconnected mid-turn`);
  };
  /** Sends park and checks the ack. An accepted ack finishes the stream on both sides: it is forgotten, with no StreamClose. */
  const park = async (ref: ParkRef) => {
    await send({ case: "park", value: create(ApprovalRefSchema, ref) });
    await expectParked(await nextEvent(inbox, start.signal).catch(() => ({ closed: "did not acknowledge the park in time" })), ref);
    open = false;
    await o.channel.forget?.(stream).catch(() => undefined);
  };
  try {
    const opened = await o.channel.open(stream);
    if (!opened.ok) throw new TunnelHarnessError(opened.reason);
    open = true;
    await send({
      case: "start",
      value: create(StartSchema, { config: start.config, history: start.history, inputs: start.inputs, resumeFromSeq: start.resumeFromSeq }),
    });
    const state = { compacting: false };
    for (;;) {
      const d = await inbox.next(start.signal);
      if ("closed" in d) {
        open = false;
        throw new TunnelHarnessError(`harness ${o.name} ${d.closed}`);
      }
      const done = await handle(o, d.event, start, sink, send, park, state);
      if (done) {
        open = false;
        return;
      }
    }
  } catch (e) {
    // Anything that ends the stream early, a refused park ack included, is told to the harness (checklist §8.5 #28).
    if (open) await o.channel.close(stream, reasonOf(e)).catch(() => undefined);
    throw e;
  } finally {
    o.inbox.unregister(stream);
  }
}

async function nextEvent(inbox: { next: (s: AbortSignal) => Promise<Delivery> }, signal: AbortSignal): Promise<Delivery> {
  const bound = AbortSignal.timeout(PARK_ACK_TIMEOUT_MS);
  const both = new AbortController();
  for (const s of [signal, bound]) s.addEventListener("abort", () => both.abort(s.reason), { once: true });
  return inbox.next(both.signal);
}

/** Applies one harness event; true when the stream is finished (END). */
async function handle(
  o: Parameters<typeof createTunnelHarness>[0],
  ev: Event,
  start: HarnessStart,
  sink: EventSink,
  send: (f: ControllerFrame["frame"]) => Promise<void>,
  park: (ref: ParkRef) => Promise<void>,
  state: { compacting: boolean },
): Promise<boolean> {
  if (ev.executionId !== start.executionId) {
    throw new TunnelHarnessError(`harness ${o.name} sent an event for execution ${JSON.stringify(ev.executionId)} on a stream of ${start.executionId}`);
  }
  const body = ev.body;
  if (state.compacting && ev.kind !== EventKind.EVENT_MODEL_CALL) {
    throw new TunnelHarnessError(
      `harness ${o.name} asked for a compaction and then sent ${EventKind[ev.kind]}: the summary's MODEL_CALL must come next (docs/tunnel.md)`,
    );
  }
  if (isCompactionRequest(ev)) {
    if (!sink.compact) throw new TunnelHarnessError("this host cannot compact this execution's history");
    state.compacting = true;
    return false;
  }
  switch (ev.kind) {
    case EventKind.EVENT_MODEL_CALL: {
      if (body.case !== "model") throw new TunnelHarnessError("a MODEL_CALL event without a model call");
      const m = body.value;
      const req = { model: m.model, params: m.params, messages: m.messages, tools: m.tools, toolChoice: m.toolChoice };
      const compact = state.compacting && sink.compact;
      state.compacting = false;
      const res = await (compact ? compact.call(sink, req) : sink.model(req));
      await send({ case: "model", value: create(ModelResultSchema, { message: res.message, usage: res.usage, modelCallId: m.id }) });
      return false;
    }
    case EventKind.EVENT_OUTPUT:
      if (body.case !== "message") throw new TunnelHarnessError("an OUTPUT event without a message");
      await sink.output(textOf(body.value));
      return false;
    case EventKind.EVENT_TOOL_CALL: {
      if (body.case !== "tool") throw new TunnelHarnessError("a TOOL_CALL event without a tool call");
      let receipt: ToolResult;
      try {
        receipt = await sink.toolCall(body.value);
      } catch (e) {
        if (o.isPark(e)) {
          await park(e.ref);
          throw e;
        }
        // A failure the harness may handle: it hears a failed result (fixed wording, so a replay says
        // the same). Conditions that stop the turn are latched by the sink and surface on its next call.
        receipt = create(ToolResultSchema, { id: body.value.id, isError: true, error: "the tool call failed" });
      }
      const decision = o.decisionOf(receipt);
      if (decision) await send({ case: "approval", value: decision });
      await send({ case: "tool", value: receipt });
      return false;
    }
    case EventKind.EVENT_TOOL_RESULT:
      if (body.case !== "result") throw new TunnelHarnessError("a TOOL_RESULT event without a result");
      await sink.report(body.value);
      return false;
    case EventKind.EVENT_USAGE:
      if (body.case !== "usage") throw new TunnelHarnessError("a USAGE event without usage");
      await sink.usage(body.value);
      return false;
    case EventKind.EVENT_END: {
      const end = body.case === "end" ? body.value : undefined;
      if (end?.state === "COMPLETED") return true;
      throw new TunnelHarnessError(end?.error?.description || `harness ${o.name} ended the execution ${end?.state || "without a state"}`);
    }
    case EventKind.EVENT_APPROVAL_REQUEST:
    case EventKind.EVENT_APPROVAL_RESULT:
    case EventKind.EVENT_EXECUTION_START:
    case EventKind.EVENT_PARKED:
      throw new TunnelHarnessError(`harness ${o.name} sent a host-owned event (${EventKind[ev.kind]}): protocol error`);
    default:
      return false; // INPUT, LIFECYCLE, ERROR: ignored, as the contract says
  }
}

async function expectParked(d: Delivery, ref: ParkRef): Promise<void> {
  if ("closed" in d) throw new TunnelHarnessError(`the harness ${d.closed}`);
  const p = d.event.body.case === "parked" ? d.event.body.value : undefined;
  if (
    d.event.kind !== EventKind.EVENT_PARKED ||
    !p ||
    p.executionId !== ref.executionId ||
    p.toolCallId !== ref.toolCallId ||
    p.requestSeq !== ref.requestSeq
  ) {
    throw new TunnelHarnessError("the harness acknowledged the park with a different approval (or not at all): protocol error");
  }
}

function reasonOf(e: unknown): string {
  return e instanceof Error ? clipText(e.message, 200) : "execution ended";
}
