/**
 * One live execution (BEHAVIOUR.md §1.4): EXECUTION_START and the INPUTs in one transaction under
 * the caller's CAS and a freshly minted fence, then Run with the live sink, then END or ERROR.
 *
 * If the first append is refused nothing was written and the harness never runs. After Run the
 * sink is sealed. A failure journals ERROR best-effort; a refused later append (superseded fence)
 * stops the turn without a terminal record.
 */
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { EventKind, EventSchema, type Event, type Message } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { endEvent, errorEvent, inputEvent, Lifecycle_Kind, lifecycleEvent } from "./events.js";
import { Resumability, type HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { boundHistory } from "../../runtimes/compaction.js";
import type { Harness, HarnessStart } from "../../runtimes/harness-spi.js";
import {
  AppendRefusedError,
  ApprovalParkedError,
  CompactionRefusedError,
  MissingToolExecutorError,
  ReplayDivergedError,
  ToolCallRefusedError,
  TurnInterruptedError,
  type AppendRefusal,
} from "./errors.js";
import type { ParkedGate } from "./tool-steps.js";
import { LiveSink, type LiveSinkOptions } from "./live-sink.js";
import type { ModelInvoker } from "./models.js";
import { TurnWriter, type RecordObserver, type TurnLog } from "./turn-writer.js";

export interface LiveTurnPlan {
  sessionUid: string;
  executionId: string;
  /** The registry name the host resolved (recorded in EXECUTION_START). */
  harnessName: string;
  harness: Harness;
  descriptor: HarnessDescriptor;
  inputs: Message[];
  config: Uint8Array;
  resumeFromSeq: bigint;
  /** CAS for the first append; unset appends at head. */
  expectedSeq?: bigint;
  signal: AbortSignal;
  /**
   * The harness runs on memory its runtime restored (a memory snapshot or a clone), which already
   * holds everything the journal says: Start.history is empty and nothing is replayed into it (I4).
   */
  memoryRestored?: boolean;
}

export interface TurnDeps {
  log: TurnLog;
  models: ModelInvoker;
  observe: RecordObserver;
  onDelta?: (chunk: string, done: boolean) => void;
  /** Host-executed tools and approvals (executor, deadlines, park notification). */
  tools?: LiveSinkOptions["tools"];
  /** The session's incremental input hash (input-hash.ts). */
  inputHash?: LiveSinkOptions["inputHash"];
}

export type TurnOutcome =
  | { kind: "completed" }
  /** Parked on an approval gate: nothing terminal was written; a decision and recovery continue it. */
  | { kind: "parked"; gate: ParkedGate }
  /** The first append was refused: nothing was written, the harness never ran. */
  | { kind: "refused"; refusal: AppendRefusal }
  /** The turn failed; an ERROR record was journaled unless `stopped` says why it could not be. */
  | { kind: "failed"; code: Code; message: string; stopped?: AppendRefusal; missingExecutor?: true };

export async function runLiveTurn(plan: LiveTurnPlan, deps: TurnDeps): Promise<TurnOutcome> {
  const before = deps.log.head();
  const writer = new TurnWriter(deps.log, 0n, deps.observe);
  const opened = writer.open([startMarker(plan), ...plan.inputs.map((m) => inputEvent(plan.executionId, m))], plan.expectedSeq);
  if (!opened.ok) return { kind: "refused", refusal: opened };

  const sink = new LiveSink({
    executionId: plan.executionId,
    writer,
    models: deps.models,
    signal: plan.signal,
    onDelta: deps.onDelta,
    inputHash: deps.inputHash,
    sinkOnly: plan.harness.sinkOnly === true,
    historyThrough: plan.memoryRestored ? undefined : before.seq,
    tools: deps.tools && {
      ...deps.tools,
      approvalsAllowed: deps.tools.approvalsAllowed && plan.descriptor.capabilities?.resumability !== Resumability.REQUIRES_MEMORY_SNAPSHOT,
    },
  });
  let history: Event[] | undefined;
  const start: HarnessStart = {
    sessionUid: plan.sessionUid,
    executionId: plan.executionId,
    config: plan.config.slice(),
    inputs: plan.inputs,
    resumeFromSeq: plan.resumeFromSeq,
    signal: plan.signal,
    // Decoded lazily: a harness that never reads its history costs no journal scan.
    get history() {
      // (to = 0 would mean "head", which by now includes this turn's own records.)
      // From the latest compaction point on (docs/history.md), as replay and recovery hand it.
      history ??= before.seq === 0n || plan.memoryRestored ? [] : (deps.log.history?.(before.seq) ?? boundHistory(deps.log.events(1n, before.seq)));
      return history;
    },
  };
  const error = preferPark(await runHarness(() => plan.harness.run(start, sink), plan.signal), sink.latched);
  sink.seal();
  return concludeTurn(writer, plan.executionId, plan.signal, error);
}

/**
 * The error a turn concludes with: a latched park wins (a harness that fumbles the park handoff
 * must not turn a committed request into a failure: #119), then the harness's own error, then
 * whatever the sink latched (a refusal the harness swallowed).
 */
export function preferPark(harnessError: unknown, latched: Error | undefined): unknown {
  if (latched instanceof ApprovalParkedError) return latched;
  return harnessError ?? latched;
}

/**
 * Runs a harness until it returns or the turn is interrupted, whichever comes first: a cancel or a
 * deadline never waits on a harness that ignores its signal (its sink is sealed right after, so a
 * harness that carries on can write nothing). Resolves to the error, or undefined on success.
 */
export async function runHarness(run: () => Promise<void>, signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return signal.reason;
  let onAbort: (() => void) | undefined;
  const interrupted = new Promise<unknown>((resolve) => {
    onAbort = () => resolve(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([
      run().then(
        () => undefined,
        (e: unknown) => e,
      ),
      interrupted,
    ]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

/**
 * Ends an execution after Run returned: END{COMPLETED} on success, else a best-effort ERROR. A
 * refused append (a newer placement owns the session) stops without a terminal record.
 */
export function concludeTurn(writer: TurnWriter, executionId: string, signal: AbortSignal, error: unknown): TurnOutcome {
  if (error === undefined && signal.aborted) error = signal.reason;
  if (error === undefined) {
    try {
      writer.append([endEvent(executionId, "COMPLETED")]);
      return { kind: "completed" };
    } catch (e) {
      error = e;
    }
  }
  return fail(writer, executionId, error);
}

function fail(writer: TurnWriter, executionId: string, e: unknown): TurnOutcome {
  // A park is not a failure: the gate's records are the turn's last until a decision.
  if (e instanceof ApprovalParkedError) {
    // The gate's own records are committed; anything staged before them was committed with them.
    writer.flush();
    return { kind: "parked", gate: e.ref };
  }
  if (e instanceof AppendRefusedError) {
    return { kind: "failed", code: Code.Aborted, message: e.message, stopped: e.refusal };
  }
  if (e instanceof TurnInterruptedError && e.why === "canceled") return cancel(writer, executionId, e);
  const code = codeOf(e);
  const message = e instanceof Error ? e.message : String(e);
  const missing = e instanceof MissingToolExecutorError ? { missingExecutor: true as const } : {};
  try {
    writer.append([errorEvent(executionId, code, message)]);
  } catch (refused) {
    if (refused instanceof AppendRefusedError) return { kind: "failed", code, message, stopped: refused.refusal, ...missing };
    throw refused;
  }
  return { kind: "failed", code, message, ...missing };
}

/** A canceled execution ends with END{CANCELED} and the session records LIFECYCLE(CANCEL), together. */
function cancel(writer: TurnWriter, executionId: string, e: TurnInterruptedError): TurnOutcome {
  try {
    writer.append([endEvent(executionId, "CANCELED"), lifecycleEvent(Lifecycle_Kind.LIFECYCLE_CANCEL, { detail: e.reason })]);
  } catch (refused) {
    if (refused instanceof AppendRefusedError) return { kind: "failed", code: Code.Canceled, message: e.message, stopped: refused.refusal };
    throw refused;
  }
  return { kind: "failed", code: Code.Canceled, message: e.message };
}

function codeOf(e: unknown): Code {
  if (e instanceof TurnInterruptedError) return e.why === "deadline" ? Code.DeadlineExceeded : Code.Canceled;
  if (e instanceof ReplayDivergedError || e instanceof MissingToolExecutorError || e instanceof CompactionRefusedError) return Code.FailedPrecondition;
  // BEHAVIOUR.md §4.12 note: a refused call inside a turn fails the turn INTERNAL (nothing recorded for it).
  if (e instanceof ToolCallRefusedError) return Code.Internal;
  return Code.Internal;
}

function startMarker(plan: LiveTurnPlan): Event {
  return create(EventSchema, {
    executionId: plan.executionId,
    kind: EventKind.EVENT_EXECUTION_START,
    body: {
      case: "executionStart",
      value: {
        config: plan.config,
        resumeFromSeq: plan.resumeFromSeq,
        inputCount: BigInt(plan.inputs.length),
        harness: plan.harnessName,
        harnessVersion: plan.descriptor.version,
      },
    },
  });
}
