/**
 * One live execution (docs/behaviour.md §1.4): EXECUTION_START and the INPUTs in one transaction under
 * the caller's CAS and a freshly minted fence, then Run with the live sink, then END or ERROR. For a
 * sink-only harness that first transaction is the turn's first commit (TurnWriter.open, staged).
 *
 * If the first append is refused nothing was written and the harness never runs. After Run the
 * sink is sealed. A failure journals ERROR best-effort; a refused later append (superseded fence)
 * stops the turn without a terminal record.
 */
import { create } from "@bufbuild/protobuf";
import { EventKind, EventSchema, type Event, type Message } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { endEvent, errorEvent, inputEvent, Lifecycle_Kind, lifecycleEvent } from "./events.js";
import { Resumability, type HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { boundHistory } from "../../runtimes/compaction.js";
import type { Harness } from "../../runtimes/harness-spi.js";
import { AppendRefusedError, ApprovalParkedError, classifyTurnError, TurnInterruptedError, type AppendRefusal, type TurnError } from "./errors.js";
import { createHarnessStart } from "./harness-start.js";
import type { ParkedGate } from "./tool-steps.js";
import { LiveSink, type LiveSinkOptions } from "./live-sink.js";
import type { ModelInvoker } from "./models.js";
import { TurnWriter, type EventExternalizer, type RecordObserver, type TurnLog } from "./turn-writer.js";

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
  /** Stores parts over the inline limit as blobs before their records commit (docs/blobs.md). */
  blobs?: EventExternalizer;
  /**
   * The history of a turn after record `to` (TurnLog.history: from its latest compaction point on)
   * with every blob reference resolved, when any of records 1..`to` holds one; undefined when none
   * does (the history is then decoded lazily from the log). A harness never sees a reference.
   */
  resolvedHistory?: (to: bigint) => Promise<Event[] | undefined>;
}

export type TurnOutcome =
  | { kind: "completed" }
  /** Parked on an approval gate: nothing terminal was written; a decision and recovery continue it. */
  | { kind: "parked"; gate: ParkedGate }
  /** The first append was refused: nothing was written, the harness never ran. */
  | { kind: "refused"; refusal: AppendRefusal }
  /**
   * The turn failed, classified once (errors.ts `classifyTurnError`): its ERROR record carries
   * `code`, the caller is told `reason`. ERROR was journaled unless `stopped` says why it could not be.
   */
  | ({ kind: "failed"; stopped?: AppendRefusal } & TurnError);

export async function runLiveTurn(plan: LiveTurnPlan, deps: TurnDeps): Promise<TurnOutcome> {
  const before = deps.log.head();
  const writer = new TurnWriter(deps.log, 0n, deps.observe, deps.blobs);
  let first: readonly Event[] = [startMarker(plan), ...plan.inputs.map((m) => inputEvent(plan.executionId, m))];
  try {
    first = await writer.externalize(first);
  } catch (e) {
    if (e instanceof AppendRefusedError) return { kind: "refused", refusal: e.refusal };
    throw e;
  }
  // A harness that reaches nothing but its sink cannot show anyone its inputs before its first
  // record commits: they commit with it (docs/behaviour.md §1.5 "When records commit").
  const opened = writer.open(first, plan.expectedSeq, plan.harness.sinkOnly === true);
  if (!opened.ok) return { kind: "refused", refusal: opened };
  const resolved = before.seq === 0n || plan.memoryRestored ? undefined : await deps.resolvedHistory?.(before.seq);

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
  const start = createHarnessStart({
    sessionUid: plan.sessionUid,
    executionId: plan.executionId,
    config: plan.config,
    inputs: plan.inputs,
    resumeFromSeq: plan.resumeFromSeq,
    signal: plan.signal,
    // (to = 0 would mean "head", which by now includes this turn's own records.) From the latest
    // compaction point on (docs/history.md), as replay and recovery hand it.
    history: () => {
      if (before.seq === 0n || plan.memoryRestored) return [];
      if (resolved) return resolved;
      return deps.log.history?.(before.seq) ?? boundHistory(deps.log.events(1n, before.seq));
    },
  });
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
  const error = classifyTurnError(e);
  if (e instanceof AppendRefusedError) return { kind: "failed", ...error, stopped: e.refusal };
  if (e instanceof TurnInterruptedError && e.why === "canceled") return cancel(writer, executionId, error, e.reason);
  try {
    writer.append([errorEvent(executionId, error.code, error.message)]);
  } catch (refused) {
    if (refused instanceof AppendRefusedError) return { kind: "failed", ...error, stopped: refused.refusal };
    throw refused;
  }
  return { kind: "failed", ...error };
}

/** A canceled execution ends with END{CANCELED} and the session records LIFECYCLE(CANCEL), together. */
function cancel(writer: TurnWriter, executionId: string, error: TurnError, reason: string): TurnOutcome {
  try {
    writer.append([endEvent(executionId, "CANCELED"), lifecycleEvent(Lifecycle_Kind.LIFECYCLE_CANCEL, { detail: reason })]);
  } catch (refused) {
    if (refused instanceof AppendRefusedError) return { kind: "failed", ...error, stopped: refused.refusal };
    throw refused;
  }
  return { kind: "failed", ...error };
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
