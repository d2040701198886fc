/**
 * The replay and resume sinks (BEHAVIOUR.md §2.4-2.5): serve an execution's recorded effects, in
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
  ToolResultSchema,
  UsageSchema,
  type Event,
  type ToolCall,
  type ToolResult,
  type Usage,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import { modelInputHash } from "../../proto/canon.js";
import { textOf } from "../../proto/messages.js";
import type { EventSink, ModelRequest, ModelResponse } from "../../runtimes/harness-spi.js";
import { ModelProviderError, ReplayDivergedError, SinkClosedError } from "./errors.js";
import type { LoggedEvent } from "./execution-log.js";
import { wireModelCall, type LiveSink } from "./live-sink.js";

export interface RecordedSinkOptions {
  effects: readonly LoggedEvent[];
  /** Resume only: the live sink that takes over once the recorded prefix is consumed. */
  live?: LiveSink;
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
  leftover(): ReplayDivergedError | undefined {
    if (this._latched) return undefined;
    const next = this._o.effects[this._at];
    if (!next) return undefined;
    return new ReplayDivergedError(next.seq, `the harness finished without re-issuing the recorded ${kindName(next.event)}`);
  }

  /** The first divergence raised (even if the harness swallowed it). */
  get divergence(): Error | undefined {
    return this._latched;
  }

  model(req: ModelRequest): Promise<ModelResponse> {
    return this._serial(async () => {
      const rec = this._peek();
      if (!rec) return this._live().model(req);
      const call = this._expect(rec, EventKind.EVENT_MODEL_CALL, "a model call");
      const recorded = call.body.case === "model" ? call.body.value : undefined;
      const hash = modelInputHash(wireModelCall(req));
      if (!recorded || recorded.inputHash !== hash) {
        throw this._diverge(rec.seq, "model input hash mismatch: the harness sent a different model request than it did live (I0)");
      }
      this._at++;
      const answer = this._peek();
      if (answer?.event.kind === EventKind.EVENT_OUTPUT && answer.event.body.case === "message") {
        this._at++;
        return { message: answer.event.body.value };
      }
      if (!answer && this._o.live) {
        // A cut: the call was recorded but its answer was lost. Ask the provider once, now.
        return this._o.live.answerRecordedCall(req, recorded);
      }
      // The call failed when it ran and the harness carried on: fail it the same way again.
      throw new ModelProviderError(`the model call recorded at seq ${rec.seq} has no answer: it failed when it ran`);
    });
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

  toolCall(call: ToolCall): Promise<ToolResult> {
    return this._serial(async () => {
      const rec = this._peek();
      if (!rec) return this._live().toolCall(call);
      throw this._diverge(rec.seq, `a tool call (${call.tool}) where the journal records ${kindName(rec.event)}`);
    });
  }

  report(result: ToolResult): Promise<void> {
    return this._serial(async () => {
      const rec = this._peek();
      if (!rec) return this._live().report(result);
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

  private _diverge(seq: bigint, reason: string): ReplayDivergedError {
    const e = new ReplayDivergedError(seq, reason);
    this._latched ??= e;
    return e;
  }

  private _serial<T>(op: () => Promise<T>): Promise<T> {
    if (this._sealed) return Promise.reject(new SinkClosedError());
    if (this._latched) return Promise.reject(this._latched);
    const guarded = () => (this._latched ? Promise.reject(this._latched) : op());
    const run = this._queue.then(guarded, guarded);
    this._queue = run.catch(() => undefined);
    return run;
  }
}

function kindName(ev: Event): string {
  return (EventKind[ev.kind] ?? String(ev.kind)).replace(/^EVENT_/, "");
}
