/**
 * One stream of a tunnel connection: exactly one execution, i.e. one Harness.Connect call
 * (docs/contract.md §5.3, docs/tunnel.md "Streams"). It runs `harness.run` on the Start frame, answers
 * the host's frames to the one request outstanding, and ends in exactly one way:
 *
 * - `run` settles: END{COMPLETED} or END{FAILED, description};
 * - a park frame: one EVENT_PARKED echoing the ApprovalRef, and no END;
 * - a frame that breaks the choreography (wrong model_call_id, wrong tool result id, an answer to
 *   nothing): END{FAILED} naming the mismatch;
 * - a Cancel frame: END{CANCELED};
 * - StreamClose, or the socket dropping: nothing more is sent.
 *
 * Whichever comes first wins; afterwards the run's signal is aborted, the outstanding sink call and
 * every later one reject with the reason, and late frames are ignored.
 * @internal Used by connection.ts; tested through serve() in test/node/sdk-harness/.
 */
import { create } from "@bufbuild/protobuf";
import {
  EventKind,
  EventSchema,
  HarnessEndSchema,
  type ApprovalRef,
  type ApprovalResult,
  type Event,
  type ToolResult,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { ControllerFrame, ModelResult, Start } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import type { Harness, HarnessStart } from "../../runtimes/harness-spi.js";
import { ApprovalParkedError, canceledError, connectionLostError, descriptionOf, protocolError, sinkClosedError, streamClosedError } from "./errors.js";
import { createRemoteSink } from "./remote-sink.js";

export interface StreamIo {
  /** Sends one event of this stream; dropped when the socket is already gone. */
  send(event: Event): void;
  /** Called once when this side of the stream is over (nothing more will be sent). */
  done(): void;
}

/** The one request a stream may have outstanding (§5.3: the host serializes sink operations). */
export type Pending =
  | { kind: "model"; id: string; resolve(r: ModelResult): void; reject(e: Error): void }
  | { kind: "tool"; callId: string; approval?: ApprovalResult; resolve(r: ToolResult): void; reject(e: Error): void };

export class TunnelStream {
  private _stopped: Error | undefined;
  private _pending: Pending | undefined;
  private _queue: Promise<unknown> = Promise.resolve();
  private readonly _abort = new AbortController();
  private _executionId = "";

  constructor(
    readonly id: string,
    private readonly _io: StreamIo,
  ) {}

  /** Runs the harness for the stream's Start frame. */
  begin(frame: ControllerFrame, s: Start, harness: Harness): void {
    this._executionId = frame.executionId;
    const start: HarnessStart = {
      sessionUid: frame.session,
      executionId: frame.executionId,
      config: s.config,
      history: s.history,
      inputs: s.inputs,
      resumeFromSeq: s.resumeFromSeq,
      signal: this._abort.signal,
    };
    const sink = createRemoteSink(this);
    void Promise.resolve()
      .then(() => harness.run(start, sink))
      .then(
        () => this._finish(undefined),
        (e: unknown) => this._finish(e ?? new Error("execution failed")),
      );
  }

  /** Refuses a Start (the harness is leaving): END{FAILED} at once, without running anything. */
  refuse(frame: ControllerFrame, description: string): void {
    this._executionId = frame.executionId;
    this._stop(sinkClosedError(), this._end("FAILED", description));
  }

  /** A frame after Start: the answer to the outstanding request, a park, or a cancel. */
  onFrame(frame: ControllerFrame): void {
    if (this._stopped) return; // a late answer to a stream we already ended
    const f = frame.frame;
    const p = this._pending;
    switch (f.case) {
      case "model":
        if (p?.kind !== "model") return this._fail("the host sent a model result while no model call was outstanding");
        if (f.value.modelCallId !== p.id)
          return this._fail(`the host answered model call ${JSON.stringify(f.value.modelCallId)}, but the outstanding call is ${JSON.stringify(p.id)}`);
        this._pending = undefined;
        return p.resolve(f.value);
      case "tool":
        if (p?.kind !== "tool") return this._fail("the host sent a tool result while no tool call was outstanding");
        if (f.value.id !== p.callId)
          return this._fail(`the host sent the result of tool call ${JSON.stringify(f.value.id)}, but the outstanding call is ${JSON.stringify(p.callId)}`);
        if (!receiptFits(f.value, p.approval)) return this._fail(`the receipt of tool call ${JSON.stringify(p.callId)} does not match its approval`);
        this._pending = undefined;
        return p.resolve(f.value);
      case "approval":
        if (p?.kind !== "tool" || p.approval) return this._fail("the host sent an approval result while no tool call was waiting for one");
        if (f.value.toolCallId !== p.callId)
          return this._fail(
            `the host sent the approval of tool call ${JSON.stringify(f.value.toolCallId)}, but the outstanding call is ${JSON.stringify(p.callId)}`,
          );
        p.approval = f.value;
        return;
      case "park":
        if (p?.kind !== "tool" || p.approval) return this._fail("the host parked the execution while no tool call was outstanding");
        if (f.value.toolCallId !== p.callId)
          return this._fail(`the host parked on tool call ${JSON.stringify(f.value.toolCallId)}, but the outstanding call is ${JSON.stringify(p.callId)}`);
        return this._park(f.value);
      case "cancel": {
        const err = canceledError(f.value.reason);
        this._stop(err, this._end("CANCELED", err.rawMessage));
        return;
      }
      case "start":
        return this._fail("the host sent a second start frame on one stream");
      default:
        return; // a frame kind this SDK does not know: ignored, for forward compatibility
    }
  }

  /** StreamClose, or a TunnelError naming this stream: stop and send nothing more. */
  closeByHost(reason: string): void {
    this._stop(streamClosedError(reason));
  }

  /** The socket is gone: the host leaves the execution interrupted for Resume to re-drive. */
  lose(): void {
    this._stop(connectionLostError());
  }

  /** @internal A sink call that expects no answer (OUTPUT, TOOL_RESULT, USAGE). */
  emit(kind: EventKind, body: Event["body"]): Promise<void> {
    return this._op(() => this._io.send(this._event(kind, body)));
  }

  /** @internal A sink call the host answers (MODEL_CALL, TOOL_CALL); `pending` says which answer fits. */
  request<T extends ModelResult | ToolResult>(
    kind: EventKind,
    body: Event["body"],
    pending: (resolve: (r: T) => void, reject: (e: Error) => void) => Pending,
  ): Promise<T> {
    return this._op(
      () =>
        new Promise<T>((resolve, reject) => {
          this._pending = pending(resolve, reject);
          this._io.send(this._event(kind, body));
        }),
    );
  }

  /** Sink calls run one at a time, in call order, each after the previous one's answer. */
  private _op<T>(fn: () => T | Promise<T>): Promise<T> {
    const p = this._queue.then(() => {
      if (this._stopped) throw this._stopped;
      return fn();
    });
    this._queue = p.catch(() => undefined);
    return p;
  }

  /** END goes behind any sink call still queued, so it is the stream's last event. */
  private _finish(err: unknown): Promise<void> {
    const end = err === undefined ? this._end("COMPLETED") : this._end("FAILED", descriptionOf(err));
    return this._op(() => void this._stop(sinkClosedError(), end, false)).catch(() => undefined);
  }

  private _park(ref: ApprovalRef): void {
    this._stop(new ApprovalParkedError(ref), this._event(EventKind.EVENT_PARKED, { case: "parked", value: ref }));
  }

  private _fail(description: string): void {
    this._stop(protocolError(description), this._end("FAILED", description));
  }

  /** `abort`: abort the run's signal (not when the run itself finished). */
  private _stop(err: Error, last?: Event, abort = true): void {
    if (this._stopped) return;
    this._stopped = err;
    const p = this._pending;
    this._pending = undefined;
    if (last) this._io.send(last);
    p?.reject(err);
    if (abort) this._abort.abort(err);
    this._io.done();
  }

  private _end(state: "COMPLETED" | "FAILED" | "CANCELED", description?: string): Event {
    const end = create(HarnessEndSchema, { state, error: description === undefined ? undefined : { description } });
    return this._event(EventKind.EVENT_END, { case: "end", value: end });
  }

  private _event(kind: EventKind, body: Event["body"]): Event {
    return create(EventSchema, { executionId: this._executionId, kind, body });
  }
}

/**
 * §5.3: a host-executed call's receipt carries no approval fields; a decided gate's receipt names the
 * request the ApprovalResult named and a decision seq.
 */
function receiptFits(r: ToolResult, approval: ApprovalResult | undefined): boolean {
  if (!approval) return r.approvalRequestSeq === 0n && r.approvalDecisionSeq === 0n;
  return r.approvalRequestSeq === approval.requestSeq && r.approvalDecisionSeq > 0n;
}
