/**
 * The live event sink: record before effect (docs/behaviour.md §1.5).
 *
 * Every harness call is journaled before the harness sees its result: MODEL_CALL before the
 * provider is invoked, OUTPUT after it answers. Calls are serialized (one outstanding request per
 * execution), appends go at head under the turn's fence, and after Run returns the sink is sealed.
 */
import { create } from "@bufbuild/protobuf";
import {
  EventKind,
  EventSchema,
  Mediation,
  MessageSchema,
  ModelCallSchema,
  type Event,
  type ModelCall,
  type ToolCall,
  type ToolResult,
  type Usage,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import { asStored, modelInputHash } from "../../proto/canon.js";
import { mintModelCallId } from "../../proto/ids.js";
import { assistantText } from "../../proto/messages.js";
import type { EventSink, ModelRequest, ModelResponse, ToolCallOptions } from "../../runtimes/harness-spi.js";
import { compactionMarker } from "../../runtimes/compaction.js";
import {
  ApprovalParkedError,
  CompactionRefusedError,
  MissingToolExecutorError,
  ModelProviderError,
  ReplayDivergedError,
  SinkClosedError,
  ToolCallRefusedError,
  TurnInterruptedError,
} from "./errors.js";
import type { InputHashCache } from "./input-hash.js";
import type { ModelInvoker } from "./models.js";
import { completeGate, execute, park, recordAndExecute, refuseBeforeIntent, reportRefusal, type ToolContext } from "./tool-steps.js";
import type { TurnWriter } from "./turn-writer.js";

export interface LiveSinkOptions {
  executionId: string;
  writer: TurnWriter;
  models: ModelInvoker;
  signal: AbortSignal;
  onDelta?: (chunk: string, done: boolean) => void;
  /** Everything host-executed tools need; without it every host-executed call fails closed. */
  tools?: Omit<ToolContext, "executionId" | "writer" | "signal">;
  /** The session's incremental input hash (input-hash.ts); modelInputHash from scratch without one. */
  inputHash?: InputHashCache;
  /**
   * The harness reaches nothing but this sink (Harness.sinkOnly): its OUTPUT and USAGE records, and
   * a host-run model's MODEL_CALL and answer, are staged for the turn's next commit.
   */
  sinkOnly?: boolean;
  /**
   * The seq of the last record before this execution's EXECUTION_START: what a compaction covers
   * through (docs/history.md). Unset: the sink refuses compactions.
   */
  historyThrough?: bigint;
}

export class LiveSink implements EventSink {
  private _sealed = false;
  private _latched: Error | undefined;
  private _queue: Promise<unknown> = Promise.resolve();
  private readonly _tools: ToolContext;

  constructor(private readonly _o: LiveSinkOptions) {
    this._tools = {
      sessionUid: "",
      approvalsAllowed: false,
      now: () => Date.now(),
      knownCallIds: new Set(),
      ..._o.tools,
      executionId: _o.executionId,
      writer: { append: async (events) => this._append(await this._externalize(events)) },
      signal: _o.signal,
    };
  }

  /** After this, every call fails with SinkClosedError and writes nothing. */
  seal(): void {
    this._sealed = true;
  }

  /**
   * The error that stopped this sink even if the harness swallowed it: a refused tool call, a
   * missing executor, or an approval park. The turn concludes with it.
   */
  get latched(): Error | undefined {
    return this._latched;
  }

  /** Stops the sink with `e`: every later call fails with it and writes nothing. */
  latch(e: Error): Error {
    this._latched ??= e;
    return this._latched;
  }

  model(req: ModelRequest): Promise<ModelResponse> {
    return this._serial(() => this._modelCall(req));
  }

  /**
   * A compaction (EventSink.compact): the model call as `model` makes it, and its answer committed
   * together with the marker, so no journal holds a summary without its marker or the reverse.
   */
  compact(req: ModelRequest): Promise<ModelResponse> {
    return this._serial(async () => {
      this._check();
      const through = this._o.historyThrough;
      if (through === undefined || through < 1n) {
        throw this.latch(new CompactionRefusedError("nothing to compact: this execution's history is empty (compact once the session has earlier turns)"));
      }
      return this._modelCall(req, through);
    });
  }

  /** A compaction's answer on a MODEL_CALL recorded before a crash (see answerRecordedCall). */
  answerRecordedCompaction(req: ModelRequest, recorded: ModelCall): Promise<ModelResponse> {
    this._check();
    const through = this._o.historyThrough;
    if (through === undefined || through < 1n)
      return Promise.reject(this.latch(new CompactionRefusedError("nothing to compact: this execution's history is empty")));
    return this._invokeAndRecord({ ...req, model: recorded.model || this._o.models.resolve(req.model) }, through);
  }

  private async _modelCall(req: ModelRequest, compactThrough?: bigint): Promise<ModelResponse> {
    const model = this._o.models.resolve(req.model);
    // A model no provider serves is a configuration problem, not a provider failure: nothing is recorded.
    if (model === "") {
      throw new ModelProviderError("no model named: the harness asked for the default, and neither the session's model nor MODEL_DEFAULT is set");
    }
    if (!this._o.models.serves(model)) {
      throw new ModelProviderError(`no model provider serves model "${model}" on this host (configure MODEL_BASE_URL)`);
    }
    const call = wireModelCall(req);
    const inputHash = this._o.inputHash ? this._o.inputHash.hash(call) : modelInputHash(call);
    // Committed before the call leaves the host; a host-run model's call leaves nothing.
    await this._record(
      EventKind.EVENT_MODEL_CALL,
      { case: "model", value: create(ModelCallSchema, { model, params: req.params ?? {}, inputHash, id: mintModelCallId() }) },
      this._staysInHost(model),
    );
    return this._invokeAndRecord({ ...req, model }, compactThrough);
  }

  /**
   * Answers a MODEL_CALL recorded before a crash (resume's "model cut"): one provider call for the
   * recorded model, then OUTPUT after the existing MODEL_CALL. Not serialized: the resume sink
   * calls it from inside its own serialized operation.
   */
  answerRecordedCall(req: ModelRequest, recorded: ModelCall): Promise<ModelResponse> {
    this._check();
    return this._invokeAndRecord({ ...req, model: recorded.model || this._o.models.resolve(req.model) });
  }

  private async _invokeAndRecord(req: ModelRequest, compactThrough?: bigint): Promise<ModelResponse> {
    const onDelta = this._o.onDelta;
    let streamed = false;
    const answered = await this._o.models.invoke(req, {
      signal: this._o.signal,
      onDelta:
        onDelta &&
        ((chunk) => {
          streamed = true;
          onDelta(chunk, false);
        }),
    });
    this._check();
    // The answer as the journal will hold it, for the harness too (proto/canon.ts asStored).
    const res = { ...answered, message: asStored(MessageSchema, answered.message) };
    // A streamed completion ends with a "done" delta; an unstreamed one (echo) sends none.
    if (onDelta && streamed) onDelta("", true);
    if (compactThrough !== undefined) {
      // The summary and its marker commit in one transaction (docs/history.md "Recovery").
      const output = create(EventSchema, { executionId: this._o.executionId, kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: res.message } });
      const events = await this._externalize([output, compactionMarker(this._o.executionId, compactThrough)]);
      this._check();
      this._append(events);
      return res;
    }
    // A provider's answer cost a call: it is committed at once. A host-run model's can wait.
    await this._record(EventKind.EVENT_OUTPUT, { case: "message", value: res.message }, this._staysInHost(req.model));
    return res;
  }

  output(text: string): Promise<void> {
    return this._serial(async () => {
      await this._record(EventKind.EVENT_OUTPUT, { case: "message", value: assistantText(text) }, this._o.sinkOnly === true);
    });
  }

  toolCall(call: ToolCall, opts?: ToolCallOptions): Promise<ToolResult> {
    return this._serial(async () => {
      this._check();
      const refused = refuseBeforeIntent(this._tools, call);
      if (refused) throw this.latch(refused);
      try {
        if (call.mediation === Mediation.REQUIRES_APPROVAL) await park(this._tools, call, opts?.approvalTimeoutSeconds);
        return await recordAndExecute(this._tools, call);
      } catch (e) {
        throw this._latchFatal(e);
      }
    });
  }

  /** Re-drives a recorded intent that has no receipt (resume's "tool cut"). Called from inside the recorded sink. */
  executeRecorded(call: ToolCall): Promise<ToolResult> {
    this._check();
    this._tools.knownCallIds.add(call.id);
    return execute(this._tools, call).catch((e: unknown) => Promise.reject(this._latchFatal(e)));
  }

  /** Completes a decided approval gate (recovery). Called from inside the recorded sink. */
  completeGate(call: ToolCall, requestSeq: bigint, decision: { approved: boolean; reason: string; seq: bigint }): Promise<ToolResult> {
    this._check();
    // A gate is only completed by the kind of harness that may open one (checklist §8.14 #118), and only
    // for a call it can name (a gate without a call id is evidence this host never writes: #93).
    if (!this._tools.approvalsAllowed) {
      return Promise.reject(
        this.latch(
          new ToolCallRefusedError(
            "approval_unavailable",
            `tool ${call.tool} requires approval, which needs a STATELESS_REPLAY harness: the decided gate was not completed`,
          ),
        ),
      );
    }
    if (call.id === "") return Promise.reject(this.latch(new ReplayDivergedError(requestSeq, "the recorded approval-gated call has no id")));
    this._tools.knownCallIds.add(call.id);
    return completeGate(this._tools, call, requestSeq, decision).catch((e: unknown) => Promise.reject(this._latchFatal(e)));
  }

  /** The ids of tool calls already recorded in this execution (a recovered prefix). */
  noteCallIds(ids: Iterable<string>): void {
    for (const id of ids) this._tools.knownCallIds.add(id);
  }

  report(result: ToolResult): Promise<void> {
    return this._serial(async () => {
      const refused = reportRefusal(result);
      if (refused) throw this.latch(new ToolCallRefusedError("invalid_args", refused));
      await this._record(EventKind.EVENT_TOOL_RESULT, { case: "result", value: result });
    });
  }

  usage(usage: Usage): Promise<void> {
    return this._serial(async () => {
      await this._record(EventKind.EVENT_USAGE, { case: "usage", value: usage }, this._o.sinkOnly === true);
    });
  }

  /** A sink-only harness calling a model answered inside the host: nothing leaves the object. */
  private _staysInHost(model: string): boolean {
    return this._o.sinkOnly === true && this._o.models.inProcess?.(model) === true;
  }

  /**
   * Records one event: now, or staged for the turn's next commit (see TurnWriter). A part over the
   * inline limit is stored as a blob first, and the record carries its reference (docs/blobs.md).
   */
  private async _record(kind: EventKind, body: Event["body"], staged = false): Promise<void> {
    this._check();
    const [ev] = await this._externalize([create(EventSchema, { executionId: this._o.executionId, kind, body })]);
    this._check();
    if (!staged) {
      this._append([ev!]);
      return;
    }
    try {
      this._o.writer.stage([ev!]);
    } catch (e) {
      throw this.latch(e instanceof Error ? e : new Error(String(e)));
    }
  }

  /**
   * Every append of the turn. A failed one (refused or a storage fault) latches: the harness saw
   * no result for an effect that is not on record, so it must not carry on as if it had one (a
   * swallowed failure would let the turn complete without, say, its gated call: checklist §8.14 #108, #113).
   */
  private _append(events: readonly Event[]) {
    try {
      return this._o.writer.append(events);
    } catch (e) {
      throw this.latch(e instanceof Error ? e : new Error(String(e)));
    }
  }

  /** Stores the blobs of parts over the inline limit (TurnWriter.externalize); a failure latches. */
  private async _externalize(events: readonly Event[]): Promise<readonly Event[]> {
    try {
      return await this._o.writer.externalize(events);
    } catch (e) {
      throw this.latch(e instanceof Error ? e : new Error(String(e)));
    }
  }

  private _check(): void {
    if (this._sealed) throw new SinkClosedError();
    const s = this._o.signal;
    if (s.aborted) {
      const why = s.reason instanceof TurnInterruptedError ? s.reason : new TurnInterruptedError("canceled", "the turn was canceled");
      throw why;
    }
  }

  /** Parks and a missing executor stop the turn; an executor failure is the harness's to handle. */
  private _latchFatal(e: unknown): unknown {
    if (e instanceof ApprovalParkedError || e instanceof MissingToolExecutorError) return this.latch(e);
    return e;
  }

  private _serial<T>(op: () => Promise<T>): Promise<T> {
    if (this._latched) return Promise.reject(this._latched);
    if (this._sealed) return Promise.reject(new SinkClosedError());
    const guarded = () => (this._latched ? Promise.reject(this._latched) : op());
    const run = this._queue.then(guarded, guarded);
    this._queue = run.catch(() => undefined);
    return run;
  }
}

/** The request as the harness issued it, in wire form: what input_hash covers (docs/contract.md §7.7). */
export function wireModelCall(req: ModelRequest): ModelCall {
  const call = create(ModelCallSchema, { model: req.model, params: req.params ?? {}, tools: req.tools ?? [], toolChoice: req.toolChoice });
  // The harness's messages as they are: create() would visit each to check it is a Message, which
  // costs a long conversation's length on every call (they are Messages: the SPI's type says so).
  call.messages = req.messages;
  return call;
}
