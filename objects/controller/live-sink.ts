/**
 * The live event sink: record before effect (BEHAVIOUR.md §1.5).
 *
 * Every harness call is journaled before the harness sees its result: MODEL_CALL before the
 * provider is invoked, OUTPUT after it answers. Calls are serialized (one outstanding request per
 * execution), appends go at head under the turn's fence, and after Run returns the sink is sealed.
 */
import { create } from "@bufbuild/protobuf";
import {
  EventKind,
  EventSchema,
  ModelCallSchema,
  type Event,
  type ModelCall,
  type ToolCall,
  type ToolResult,
  type Usage,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import { modelInputHash } from "../../proto/canon.js";
import { mintModelCallId } from "../../proto/ids.js";
import { assistantText } from "../../proto/messages.js";
import type { EventSink, ModelRequest, ModelResponse } from "../../runtimes/harness-spi.js";
import { ModelProviderError, SinkClosedError, TurnInterruptedError } from "./errors.js";
import type { ModelInvoker } from "./models.js";
import type { TurnWriter } from "./turn-writer.js";

export interface LiveSinkOptions {
  executionId: string;
  writer: TurnWriter;
  models: ModelInvoker;
  signal: AbortSignal;
  onDelta?: (chunk: string, done: boolean) => void;
}

export class LiveSink implements EventSink {
  private _sealed = false;
  private _queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly _o: LiveSinkOptions) {}

  /** After this, every call fails with SinkClosedError and writes nothing. */
  seal(): void {
    this._sealed = true;
  }

  model(req: ModelRequest): Promise<ModelResponse> {
    return this._serial(async () => {
      const model = this._o.models.resolve(req.model);
      // A model no provider serves is a configuration problem, not a provider failure: nothing is recorded.
      if (model === "") {
        throw new ModelProviderError("no model named: the harness asked for the default, and neither the session's model nor MODEL_DEFAULT is set");
      }
      if (!this._o.models.serves(model)) {
        throw new ModelProviderError(`no model provider serves model "${model}" on this host (configure MODEL_BASE_URL)`);
      }
      const inputHash = modelInputHash(wireModelCall(req));
      this._record(EventKind.EVENT_MODEL_CALL, {
        case: "model",
        value: create(ModelCallSchema, { model, params: req.params ?? {}, inputHash, id: mintModelCallId() }),
      });
      return this._invokeAndRecord({ ...req, model });
    });
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

  private async _invokeAndRecord(req: ModelRequest): Promise<ModelResponse> {
    const onDelta = this._o.onDelta;
    let streamed = false;
    const res = await this._o.models.invoke(req, {
      signal: this._o.signal,
      onDelta:
        onDelta &&
        ((chunk) => {
          streamed = true;
          onDelta(chunk, false);
        }),
    });
    this._check();
    // A streamed completion ends with a "done" delta; an unstreamed one (echo) sends none.
    if (onDelta && streamed) onDelta("", true);
    this._record(EventKind.EVENT_OUTPUT, { case: "message", value: res.message });
    return res;
  }

  output(text: string): Promise<void> {
    return this._serial(async () => {
      this._record(EventKind.EVENT_OUTPUT, { case: "message", value: assistantText(text) });
    });
  }

  toolCall(_call: ToolCall): Promise<ToolResult> {
    return this._serial(async () => {
      throw new Error("host-executed tool calls need a tool executor, and none is configured on this host");
    });
  }

  report(result: ToolResult): Promise<void> {
    return this._serial(async () => {
      this._record(EventKind.EVENT_TOOL_RESULT, { case: "result", value: result });
    });
  }

  usage(usage: Usage): Promise<void> {
    return this._serial(async () => {
      this._record(EventKind.EVENT_USAGE, { case: "usage", value: usage });
    });
  }

  private _record(kind: EventKind, body: Event["body"]): void {
    this._check();
    this._o.writer.append([create(EventSchema, { executionId: this._o.executionId, kind, body })]);
  }

  private _check(): void {
    if (this._sealed) throw new SinkClosedError();
    const s = this._o.signal;
    if (s.aborted) {
      const why = s.reason instanceof TurnInterruptedError ? s.reason : new TurnInterruptedError("canceled", "the turn was canceled");
      throw why;
    }
  }

  private _serial<T>(op: () => Promise<T>): Promise<T> {
    if (this._sealed) return Promise.reject(new SinkClosedError());
    const run = this._queue.then(op, op);
    this._queue = run.catch(() => undefined);
    return run;
  }
}

/** The request as the harness issued it, in wire form: what input_hash covers (CONTRACT.md §7.7). */
export function wireModelCall(req: ModelRequest): ModelCall {
  return create(ModelCallSchema, {
    model: req.model,
    params: req.params ?? {},
    messages: req.messages,
    tools: req.tools ?? [],
    toolChoice: req.toolChoice,
  });
}
