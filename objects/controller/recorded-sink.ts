/**
 * The replay and resume sinks (docs/behaviour.md §2.4-2.5): serve an execution's recorded effects, in
 * order, to a harness that re-runs it, and fail with ReplayDivergedError the moment it asks for
 * something else.
 *
 * Replay never invokes anything (I1) and never writes. Resume serves the recorded prefix the same
 * way, re-drives at most one cut effect (a trailing MODEL_CALL without its OUTPUT, when the harness
 * re-issues the same request: I0), and once the prefix is used up hands every call to the live sink.
 * A divergence latches: a harness that swallows it still fails on its next call.
 */
import { create, equals } from "@bufbuild/protobuf";
import {
  EventKind,
  Mediation,
  ToolResult_Code,
  ToolResultSchema,
  UsageSchema,
  type Event,
  type ToolCall,
  type ToolResult,
  type Usage,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import { modelInputHash } from "../../proto/canon.js";
import { textOf } from "../../proto/messages.js";
import { compactedThrough } from "../../runtimes/compaction.js";
import type { EventSink, ModelRequest, ModelResponse, ToolCallOptions } from "../../runtimes/harness-spi.js";
import { ApprovalParkedError, ModelProviderError, ReplayDivergedError, SinkClosedError, ToolCallRefusedError, ToolExecutionError } from "./errors.js";
import { toolCallIdentity, toolCallRefusal } from "./tool-args.js";
import { noteDecision, reportRefusal } from "./tool-steps.js";
import type { LoggedEvent } from "./execution-log.js";
import type { InputHashCache } from "./input-hash.js";
import { wireModelCall, type LiveSink } from "./live-sink.js";

export interface RecordedSinkOptions {
  effects: readonly LoggedEvent[];
  /** Resume only: the live sink that takes over once the recorded prefix is consumed. */
  live?: LiveSink;
  /** The session's incremental input hash (input-hash.ts); modelInputHash from scratch without one. */
  inputHash?: InputHashCache;
}

export class RecordedSink implements EventSink {
  private _at = 0;
  private _latched: Error | undefined;
  private _sealed = false;
  private _queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly _o: RecordedSinkOptions) {}

  seal(): void {
    this._sealed = true;
    this._o.live?.seal();
  }

  /** Recorded effects the harness did not ask for (under-consumption), as a divergence. */
  leftover(): Error | undefined {
    if (this._latched) return undefined;
    const next = this._o.effects[this._at];
    if (!next) return undefined;
    return new ReplayDivergedError(next.seq, `the harness finished without re-issuing the recorded ${kindName(next.event)}`);
  }

  /**
   * The error that stopped this sink even if the harness swallowed it: a divergence, a refused
   * call, or a park (here or in the live tail).
   */
  get latched(): Error | undefined {
    return this._latched ?? this._o.live?.latched;
  }

  model(req: ModelRequest): Promise<ModelResponse> {
    return this._serial(() => this._model(req, false));
  }

  /** A compaction: the recorded model call and summary, then its marker (docs/history.md "Recovery"). */
  compact(req: ModelRequest): Promise<ModelResponse> {
    return this._serial(() => this._model(req, true));
  }

  private async _model(req: ModelRequest, compaction: boolean): Promise<ModelResponse> {
    const rec = this._peek();
    if (!rec) return compaction ? this._live().compact(req) : this._live().model(req);
    const call = this._expect(rec, EventKind.EVENT_MODEL_CALL, "a model call");
    const recorded = call.body.case === "model" ? call.body.value : undefined;
    const wire = wireModelCall(req);
    const hash = this._o.inputHash ? this._o.inputHash.hash(wire) : modelInputHash(wire);
    if (!recorded || recorded.inputHash !== hash) {
      throw this._diverge(rec.seq, "model input hash mismatch: the harness sent a different model request than it did live (I0)");
    }
    this._at++;
    const answer = this._peek();
    if (answer?.event.kind === EventKind.EVENT_OUTPUT && answer.event.body.case === "message") {
      this._at++;
      const marker = this._peek();
      const marked = marker !== undefined && compactedThrough(marker.event) !== undefined;
      if (compaction && !marked) throw this._diverge(answer.seq, "the harness compacted where the journal records an ordinary model call");
      if (!compaction && marked) throw this._diverge(marker.seq, "the harness made an ordinary model call where the journal records a compaction");
      if (marked) this._at++;
      return { message: answer.event.body.value };
    }
    if (!answer && this._o.live) {
      // A cut: the call was recorded but its answer was lost. Ask the provider once, now.
      return compaction ? this._o.live.answerRecordedCompaction(req, recorded) : this._o.live.answerRecordedCall(req, recorded);
    }
    // The call failed when it ran and the harness carried on: fail it the same way again.
    throw new ModelProviderError(`the model call recorded at seq ${rec.seq} has no answer: it failed when it ran`);
  }

  output(text: string): Promise<void> {
    return this._serial(async () => {
      const rec = this._peek();
      if (!rec) return this._live().output(text);
      const ev = this._expect(rec, EventKind.EVENT_OUTPUT, "an output");
      const recorded = ev.body.case === "message" ? textOf(ev.body.value) : undefined;
      if (recorded !== text) throw this._diverge(rec.seq, "output mismatch: the harness emitted different text than it did live");
      this._at++;
    });
  }

  toolCall(call: ToolCall, opts?: ToolCallOptions): Promise<ToolResult> {
    return this._serial(async () => {
      const rec = this._peek();
      if (!rec) return this._live().toolCall(call, opts);
      // Inside the recorded prefix a call the host would refuse cannot be the recorded one: the
      // harness did something else than it did live (checklist §8.3 #20, checklist §8.12 #70), a divergence there.
      const refused = toolCallRefusal(call);
      if (refused)
        throw this._diverge(
          rec.seq,
          `tool call mismatch: the harness issued ${call.tool} with a call the host refuses (${refused.detail}) where the journal records seq ${rec.seq}`,
        );
      const recorded = this._expect(rec, EventKind.EVENT_TOOL_CALL, `a tool call (${call.tool})`);
      if (recorded.body.case !== "tool" || toolCallIdentity(recorded.body.value) !== toolCallIdentity(call)) {
        throw this._diverge(rec.seq, `tool call mismatch: the harness issued ${call.tool} with a different id, arguments, key or mediation than it did live`);
      }
      this._at++;
      this._o.live?.noteCallIds([call.id]);
      return call.mediation === Mediation.REQUIRES_APPROVAL ? this._gate(call, rec.seq) : this._mediated(call, rec.seq);
    });
  }

  /** A CONTROLLER_MEDIATED call: serve its receipt, re-drive a cut intent once (resume), or replay a handled failure. */
  private async _mediated(call: ToolCall, seq: bigint): Promise<ToolResult> {
    const next = this._peek();
    if (next?.event.kind === EventKind.EVENT_TOOL_RESULT) {
      const r = next.event.body.case === "result" ? next.event.body.value : undefined;
      if (!r || r.id !== call.id) throw this._diverge(next.seq, `the receipt at seq ${next.seq} does not answer tool call ${call.id}`);
      this._at++;
      return r;
    }
    if (!next && this._o.live) return this._o.live.executeRecorded(call);
    if (!next) throw this._diverge(seq, "the journal ends at a tool intent with no receipt");
    // The executor failed when it ran and the harness carried on: fail it the same way again.
    throw new ToolExecutionError(`the tool call recorded at seq ${seq} has no receipt: it failed when it ran`);
  }

  /** A REQUIRES_APPROVAL call: request, then decision, then receipt, each strictly for this call. */
  private async _gate(call: ToolCall, seq: bigint): Promise<ToolResult> {
    const req = this._peek();
    if (!req || req.event.kind !== EventKind.EVENT_APPROVAL_REQUEST || req.event.body.case !== "approval" || req.event.body.value.toolCallId !== call.id) {
      throw this._diverge(req?.seq ?? seq, `the gated call ${call.id} has no approval request after it`);
    }
    this._at++;
    const ref = { executionId: req.event.executionId, toolCallId: call.id, requestSeq: req.seq };
    const dec = this._peek();
    if (!dec) {
      if (this._o.live) throw this._latch(new ApprovalParkedError(ref));
      throw this._diverge(req.seq, "an approval request in a completed execution has no decision");
    }
    const d = dec.event.body.case === "approvalResult" ? dec.event.body.value : undefined;
    if (dec.event.kind !== EventKind.EVENT_APPROVAL_RESULT || !d || d.toolCallId !== call.id || d.requestSeq !== req.seq) {
      throw this._diverge(dec.seq, `the record after approval request ${req.seq} is not its decision`);
    }
    this._at++;
    const receipt = this._peek();
    if (!receipt) {
      if (this._o.live) return this._o.live.completeGate(call, req.seq, { approved: d.approved, reason: d.reason, seq: dec.seq });
      throw this._diverge(dec.seq, "a decided approval in a completed execution has no receipt");
    }
    const r = receipt.event.body.case === "result" ? receipt.event.body.value : undefined;
    const consistent =
      r !== undefined &&
      r.id === call.id &&
      r.approvalRequestSeq === req.seq &&
      r.approvalDecisionSeq === dec.seq &&
      (d.approved
        ? (r.code === ToolResult_Code.CODE_UNSPECIFIED && !r.isError) || (r.code === ToolResult_Code.EXECUTOR_ERROR && r.isError)
        : r.code === ToolResult_Code.APPROVAL_DENIED && r.isError);
    if (receipt.event.kind !== EventKind.EVENT_TOOL_RESULT || !consistent) {
      throw this._diverge(receipt.seq, `the receipt at seq ${receipt.seq} does not match approval request ${req.seq} and its decision`);
    }
    this._at++;
    noteDecision(r!, { toolCallId: call.id, approved: d.approved, reason: d.reason, requestSeq: req.seq });
    return r!;
  }

  report(result: ToolResult): Promise<void> {
    return this._serial(async () => {
      const rec = this._peek();
      if (!rec) return this._live().report(result);
      const refused = reportRefusal(result);
      if (refused) throw this._latch(new ToolCallRefusedError("invalid_args", refused));
      const ev = this._expect(rec, EventKind.EVENT_TOOL_RESULT, "a tool report");
      if (ev.body.case !== "result" || !equals(ToolResultSchema, ev.body.value, result)) {
        throw this._diverge(rec.seq, "tool report mismatch: the harness reported a different result than it did live");
      }
      this._at++;
    });
  }

  usage(usage: Usage): Promise<void> {
    return this._serial(async () => {
      const rec = this._peek();
      if (!rec) return this._live().usage(usage);
      const ev = this._expect(rec, EventKind.EVENT_USAGE, "usage");
      if (ev.body.case !== "usage" || !equals(UsageSchema, ev.body.value, create(UsageSchema, usage))) {
        throw this._diverge(rec.seq, "usage mismatch: the harness reported different usage than it did live");
      }
      this._at++;
    });
  }

  private _peek(): LoggedEvent | undefined {
    return this._o.effects[this._at];
  }

  private _live(): LiveSink {
    if (this._o.live) return this._o.live;
    throw this._diverge(0n, "the harness asked for more effects than the journal recorded");
  }

  private _expect(rec: LoggedEvent, kind: EventKind, what: string): Event {
    if (rec.event.kind !== kind) {
      throw this._diverge(rec.seq, `the harness made ${what} where the journal records ${kindName(rec.event)}`);
    }
    return rec.event;
  }

  private _diverge(seq: bigint, reason: string): Error {
    return this._latch(new ReplayDivergedError(seq, reason));
  }

  private _latch(e: Error): Error {
    this._latched ??= e;
    return this._latched;
  }

  private _serial<T>(op: () => Promise<T>): Promise<T> {
    const stopped = () => this._latched ?? this._o.live?.latched;
    if (stopped()) return Promise.reject(stopped());
    if (this._sealed) return Promise.reject(new SinkClosedError());
    const guarded = () => (stopped() ? Promise.reject(stopped()) : op());
    const run = this._queue.then(guarded, guarded);
    this._queue = run.catch(() => undefined);
    return run;
  }
}

function kindName(ev: Event): string {
  return (EventKind[ev.kind] ?? String(ev.kind)).replace(/^EVENT_/, "");
}
