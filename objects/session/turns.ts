/**
 * Exec and Resume: the operations that run a harness (docs/behaviour.md §4.5, §4.9, §4.10).
 * @internal
 */
import { create } from "@bufbuild/protobuf";
import { encodeBinary } from "../../proto/binary-writer.js";
import { deltaUpdateEnvelope, recordUpdateEnvelope } from "../../proto/record-envelopes.js";
import { ComputeState, ExecState, ExecUpdateSchema, type ExecRequest, type ExecUpdate, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { mintExecutionId } from "../../proto/ids.js";
import { DEFAULT_HARNESS, unknownHarnessMessage } from "../../runtimes/builtin/index.js";
import { classifyTurnError, MissingToolExecutorError, TurnInterruptedError } from "../controller/errors.js";
import { latestExecution, type ParsedLog } from "../controller/execution-log.js";
import { runLiveTurn } from "../controller/live-turn.js";
import { cachedDescriber, type DescribeHarness } from "../controller/identity.js";
import { inheritedIntent, resumeLatest, type ResumeOutcome } from "../controller/resume.js";
import type { RecordObserver } from "../controller/turn-writer.js";
import { busy, notFound, refusalFailure, resumeFailure, turnFailure } from "./failures.js";
import { FrameSink, type FrameSinkOptions, type FrameStart } from "../exec-frames.js";
import { lifecycleEvent, Lifecycle_Kind } from "../controller/events.js";
import { ownSuspendRef, runsOnRestoredMemory } from "./memory-restore.js";
import { failure, success, type Failure, type Outcome } from "./outcomes.js";
import type { Runtime } from "../../runtimes/runtime-spi.js";
import type { LiveTurn, SessionState } from "./state.js";
import { writeLogLine } from "../log-line.js";

/** The turn's frames as a stream, or for a `whole` reader an answer that ended at once as bytes. */
export type ExecStart = ({ ok: true } & FrameStart) | Failure;

/**
 * One Exec. Routing errors come back before any frame; otherwise the stream's first frame is the
 * Session, then each record as it commits (and deltas), then the end or a failure frame. An
 * inputless Exec on a session whose latest execution never ended recovers that execution.
 */
export async function startExec(s: SessionState, req: ExecRequest, stream: FrameSinkOptions = {}): Promise<ExecStart> {
  if (!s.exists()) return notFound();
  const own = s.meta.load()!.statics.harness || DEFAULT_HARNESS;
  const name = req.harness || own;
  const served = await s.served(name);
  if (!served) return failure("unknown_harness", unknownHarnessMessage(name, s.harnesses));
  if (name !== own && (served.registered || (await s.served(own))?.registered)) {
    return failure(
      "harness_pinned",
      `this session is pinned to harness "${own}": a registered harness cannot be swapped per turn (override onto or off it); start a new session instead`,
    );
  }
  const meta = s.meta.load()!;
  // docs/behaviour.md §4.11: new input waits until the gate has its receipt (a decision alone is not one).
  // A gate a fork child inherited never gets one there, so it blocks nothing: the child's own turn runs.
  if (req.inputs.length > 0 && meta.execState === ExecState.EXEC_AWAITING && !inheritedGate(s)) {
    const p = meta.pending;
    return failure(
      "approval_blocked",
      p
        ? `the session is waiting for a decision on tool call ${p.toolCallId} (execution ${p.executionId}, request seq ${p.requestSeq}): Approve it, then Resume (or Exec with no inputs) before sending new input`
        : "the session's approval has a decision but the parked turn has not finished: Resume (or Exec with no inputs) to complete it before sending new input",
    );
  }
  const out = new FrameSink(stream);
  out.update(updateBytes({ case: "session", value: s.render() }));
  if (req.deadlineUnix > 0n && BigInt(s.d.now()) >= req.deadlineUnix * 1000n) {
    out.fail(failure("deadline_exceeded", "deadline_unix is already in the past: nothing was run or written"));
    return started(out, stream);
  }
  if (s.live) {
    out.fail(busy());
    return started(out, stream);
  }
  if (req.inputs.length === 0 && meta.pending) {
    // An undecided gate: report it (a final session frame), touching neither compute nor the journal.
    out.update(updateBytes({ case: "session", value: s.render() }));
    out.close();
    return started(out, stream);
  }
  // The guard is taken before the first await, so an overlapping call can never slip in.
  const live = s.takeGuard();
  const leased = await s.lease(live);
  if (!leased.ok) {
    s.release(live);
    return leased;
  }
  void runExec(s, live, req, name, out);
  return started(out, stream);
}

/** The stream as its reader asked for it (objects/exec-frames.ts `FrameSinkOptions`). */
async function started(out: FrameSink, o: FrameSinkOptions): Promise<ExecStart> {
  return { ok: true, ...(o.whole ? await out.start() : { frames: out.stream }) };
}

/**
 * Resume (docs/behaviour.md §4.9): restore compute from this session's own latest SUSPEND ref (or a
 * fresh placement), re-drive the latest execution if it never ended, then journal
 * LIFECYCLE(RESUME) under the recovery's fresh fence.
 */
export async function resumeSession(s: SessionState, o: { marker: boolean } = { marker: true }): Promise<Outcome<Session>> {
  if (!s.exists()) return notFound();
  if (s.live) return busy();
  // A pending (undecided) approval: Resume answers with the paused session and writes nothing.
  if (s.meta.load()!.pending) return success(s.render());
  const live = s.takeGuard();
  let fence: bigint | undefined;
  try {
    // Only a recovery runs a harness; a Resume that just marks the session counts no execution.
    if (interrupted(s)) {
      const leased = await s.lease(live);
      if (!leased.ok) return leased;
    }
    const harness = s.meta.load()!.statics.harness;
    const served = await s.served(harness);
    // The gate, the live re-check and the recovery describe each harness once between them.
    const describe = cachedDescriber(s.describer());
    // The runtime the recovery's CanPlace asks: the one admission described (below), else built in.
    let runtime: Runtime | undefined;
    // docs/behaviour.md §6.1 Resume: guard → gate → Restore → re-check; a refusal touches no compute
    // and writes nothing (checklist §8.16 #149, #151).
    if (served?.runtime) {
      // The admitted harness's runtime is the one whose capabilities admission fetched: the
      // placement, the live re-check and the recovery must gate on that one (a fresh client
      // knows none yet, so it would refuse a memory-snapshot harness).
      const admitted = await s.placement.admit(harness);
      if (!admitted.ok) return admitted;
      runtime = admitted.value.served.runtime;
      // From the session's own SUSPEND ref: for the memory tier it names the snapshot to restore.
      const placed = await s.placement.ensurePlaced(harness, admitted.value.served, ownSuspendRef(s));
      if (!placed.ok) return placed;
      const rechecked = await s.placement.recheckLive(harness, admitted.value.served, describe);
      if (!rechecked.ok) return rechecked;
    } else {
      const refused = await gateBeforeRestore(s, describe);
      if (refused) return refused;
      const spec = { sessionUid: s.uid, harness };
      const ref = ownSuspendRef(s);
      await (ref ? s.runtime.restore(ref, spec) : s.runtime.create(spec));
    }
    const outcome = await recover(
      s,
      live,
      () => (fence = s.journal.mintFence()),
      () => undefined,
      undefined,
      { describe, runtime },
    );
    if (outcome.kind === "redriven" && outcome.outcome.kind === "parked") {
      // The recovered turn reached a new gate: it is parked again, and cold.
      const parked = await parkCompute(s);
      if (parked) return parked;
      s.release(live);
      return success(s.render());
    }
    const failed = resumeFailure(outcome);
    if (failed) return failed;
    if (o.marker) {
      fence ??= s.journal.mintFence();
      const marked = s.append([lifecycleEvent(Lifecycle_Kind.LIFECYCLE_RESUME)], { fence });
      if (!marked.ok) return refusalFailure(marked);
    }
    s.release(live);
    return success(s.render());
  } finally {
    s.release(live);
    await s.reports.afterChange();
  }
}

/**
 * How long a turn runs before ListSessions shows it running (docs/behaviour.md §4.3). Most turns
 * of a chat end sooner, and each report is a Directory write.
 */
export const RUNNING_REPORT_MS = 1000;

async function runExec(s: SessionState, live: LiveTurn, req: ExecRequest, name: string, out: FrameSink): Promise<void> {
  const observe: RecordObserver = (records) => {
    // Written from the stored bytes, as Replay writes records: no message is built or encoded.
    for (const r of records) out.updateFrame(recordUpdateEnvelope(r));
  };
  let result: Failure | undefined;
  let parked = false;
  const stopDeadline = armDeadline(s, live, req.deadlineUnix);
  try {
    // A turn that follows the last change closely makes the Directory's row live before it
    // writes, and is not reported on its own (directory-reports.ts).
    await s.reports.beforeChange();
    if (req.inputs.length === 0 && interrupted(s)) {
      const head = s.journal.head().seq;
      if (req.expectedLastSeq !== undefined && req.expectedLastSeq !== head) {
        result = refusalFailure({ ok: false, reason: "conflict", head, expected: req.expectedLastSeq });
        return;
      }
      const recovered = await recover(s, live, () => s.journal.mintFence(), observe, out, { runtime: (await s.served(name))?.runtime });
      if (recovered.kind === "redriven" && recovered.outcome.kind === "parked") {
        result = await parkCompute(s, observe);
        parked = result === undefined;
        return;
      }
      result = resumeFailure(recovered);
      // A recovery (with or without a gate) ends with the session as it now stands.
      parked = result === undefined;
      return;
    }
    const admitted = await s.placement.admit(name);
    if (!admitted.ok) {
      result = admitted;
      return;
    }
    if (live.abort.signal.aborted) {
      // The caller's own deadline or Cancel during admission, with its cause (checklist §8.16 #150).
      const cause: unknown = live.abort.signal.reason;
      result =
        cause instanceof TurnInterruptedError && cause.why === "deadline"
          ? failure("deadline_exceeded", "the turn's deadline_unix passed during admission: nothing was written")
          : failure("canceled", "the turn was canceled before it started: nothing was written");
      return;
    }
    const placed = await s.placement.ensurePlaced(name, admitted.value.served, admitted.value.served.runtime && ownSuspendRef(s));
    if (!placed.ok) {
      result = placed;
      return;
    }
    const rechecked = await s.placement.recheckLive(name, admitted.value.served);
    if (!rechecked.ok) {
      result = rechecked;
      await s.placement.pauseWarm(admitted.value.served);
      return;
    }
    live.executionId = mintExecutionId();
    // Tell the Directory a turn is running once it has run a while, without holding it up: a
    // short turn is reported once, when it ends (below), and a live row needs no report.
    if (!s.reports.live) s.runningReport.set(Date.now() + (s.d.runningReportMs ?? RUNNING_REPORT_MS));
    const outcome = await runLiveTurn(
      {
        sessionUid: s.uid,
        executionId: live.executionId,
        harnessName: name,
        harness: admitted.value.harness,
        descriptor: admitted.value.descriptor,
        inputs: req.inputs,
        config: req.config,
        resumeFromSeq: req.resumeFromSeq,
        expectedSeq: req.expectedLastSeq,
        signal: live.abort.signal,
        memoryRestored: runsOnRestoredMemory(s, admitted.value.descriptor, admitted.value.served.runtime),
      },
      {
        log: s.turnLog(),
        models: s.models(),
        observe,
        onDelta: deltaRelay(s, live, out),
        tools: s.toolDeps(),
        inputHash: s.inputHashes,
        blobs: s.blobWriter(),
        resolvedHistory: (to) => s.resolvedHistory(to),
      },
    );
    if (outcome.kind === "parked") {
      result = await parkCompute(s, observe);
      parked = result === undefined;
    } else {
      result = turnFailure(outcome);
      await s.placement.pauseWarm(admitted.value.served);
    }
  } catch (e) {
    writeLogLine({ level: "error", msg: "turn crashed", error: e instanceof Error ? e.name : typeof e });
    result = failure("internal", "internal error while running the turn; the journal is intact and Resume can recover it");
  } finally {
    stopDeadline();
    s.runningReport.clear();
    s.release(live);
    // The turn's last records, its end and the end frame leave together, after the report.
    out.hold();
    await s.reports.afterChange();
    if (result) out.fail(result);
    else {
      // A park (or a recovery) ends OK with a final session frame: cursor, states, pending approval.
      if (parked) out.update(updateBytes({ case: "session", value: s.render() }));
      out.close();
    }
  }
}

/**
 * After a park the session is checkpointed cold (docs/behaviour.md §4.5 item 11): snapshot through the
 * runtime and journal SUSPEND. A failed snapshot leaves the request pending and compute as it was.
 */
async function parkCompute(s: SessionState, observe?: RecordObserver): Promise<Failure | undefined> {
  let ref;
  const runtime = await s.runtimeFor(s.meta.load()!.statics.harness);
  try {
    ref = await runtime.snapshot({ id: s.uid, worker: "", address: "", runtime: runtime.name, fence: s.journal.fence() }, "EXTERNAL");
  } catch (e) {
    return failure(
      "internal",
      `the turn parked on its approval, but the ${runtime.name} runtime could not snapshot it (${e instanceof Error ? e.message : "error"}): Suspend to retry`,
    );
  }
  if (runtime !== s.runtime) s.meta.setPlacement(ComputeState.COMPUTE_COLD);
  const r = s.append(
    [
      lifecycleEvent(Lifecycle_Kind.LIFECYCLE_SUSPEND, {
        snapshotLocal: ref.local,
        snapshotExternalUri: ref.externalUri,
        snapshotMemory: ref.memory,
        snapshotSealed: ref.sealed,
      }),
    ],
    { fence: 0n, mintFence: true },
  );
  if (!r.ok) return refusalFailure(r);
  observe?.(r.records);
  return undefined;
}

/**
 * An approved gate waiting for its receipt cannot complete without an executor: refuse up front,
 * writing nothing (no fence, no ERROR), and keep the decision for when one is configured.
 */
function executorMissingForGate(s: SessionState, parsed: ParsedLog): boolean {
  if (s.d.tools || s.meta.load()!.execState !== ExecState.EXEC_AWAITING) return false;
  const latest = parsed.ok ? latestExecution(parsed) : undefined;
  const last = latest?.effects[latest.effects.length - 1];
  return last?.event.body.case === "approvalResult" && last.event.body.value.approved;
}

/**
 * Re-drives the latest execution if it never ended (controller Resume). CanPlace is checked
 * against the runtime that places the harness: its backend's, else the built-in one.
 */
async function recover(
  s: SessionState,
  live: LiveTurn,
  mintFence: () => bigint,
  observe: RecordObserver,
  out?: FrameSink,
  o: { describe?: DescribeHarness; runtime?: Runtime } = {},
): Promise<ResumeOutcome> {
  const runtime = o.runtime ?? s.runtime;
  const parsed = s.parsedLog();
  if (executorMissingForGate(s, parsed)) {
    return Promise.resolve({
      kind: "redriven",
      outcome: { kind: "failed", ...classifyTurnError(new MissingToolExecutorError()) },
    });
  }
  live.executionId = parsed.ok ? (latestExecution(parsed)?.id ?? "") : "";
  // The harness is served recorded effects and history as they were: blob references resolved.
  return resumeLatest(await s.resolvedLatest(), {
    tools: s.toolDeps(),
    blobs: s.blobWriter(),
    sessionUid: s.uid,
    log: s.turnLog(),
    mintFence,
    place: (h) => {
      const refused = s.placement.canPlace(h, runtime);
      if (refused)
        s.placement.log({ op: "recover", decision: "refused", harness: h.name, harnessId: h.descriptor.id, runtime: runtime.name, startedMs: s.d.now() });
      return refused;
    },
    describe: o.describe ?? s.describer(),
    defaultHarness: DEFAULT_HARNESS,
    models: s.models(),
    observe,
    onDelta: deltaRelay(s, live, out),
    signal: live.abort.signal,
    inputHash: s.inputHashes,
  });
}

/**
 * CanPlace before the built-in runtime restores anything (checklist §8.16 #149): the harness a
 * recovery would run (the interrupted execution's recorded one, else the session's) is described
 * and refused if it now needs memory snapshots. A harness that cannot be described is left to the
 * recovery to report, as before: only a refusal is decided here.
 */
async function gateBeforeRestore(s: SessionState, describe: DescribeHarness): Promise<Failure | undefined> {
  const parsed = s.parsedLog();
  const latest = parsed.ok ? latestExecution(parsed) : undefined;
  const name = (latest && latest.endState === undefined ? latest.start.harness : s.meta.load()!.statics.harness) || DEFAULT_HARNESS;
  const startedMs = s.d.now();
  // A harness that does not describe itself is the recovery's to report (with its cause).
  const h = await describe(name).catch(() => undefined);
  const refused = h && s.placement.canPlace(h);
  if (!h || !refused) return undefined;
  s.placement.log({ op: "recover", decision: "refused", harness: name, harnessId: h.descriptor.id, runtime: s.runtime.name, startedMs });
  return failure("unplaceable", `${refused}; nothing was restored or written`);
}

/**
 * Whether the gate the latest execution waits on was copied from a fork parent (docs/behaviour.md §4.11
 * "Forked children"): it cannot be approved, resumed or re-driven in the child (checklist §8.14 #114).
 */
function inheritedGate(s: SessionState): boolean {
  const parsed = s.parsedLog();
  if (!parsed.ok) return false;
  const latest = latestExecution(parsed);
  return latest !== undefined && inheritedIntent(parsed, latest) !== undefined;
}

/** Whether the latest execution never ended (a crash, or a failure Resume may retry). */
export function interrupted(s: SessionState): boolean {
  return s.cache.latestOpen();
}

function armDeadline(s: SessionState, live: LiveTurn, deadlineUnix: bigint): () => void {
  if (deadlineUnix <= 0n) return () => undefined;
  const ms = Number(deadlineUnix * 1000n - BigInt(s.d.now()));
  const t = setTimeout(() => live.abort.abort(new TurnInterruptedError("deadline", "the turn's deadline_unix passed")), Math.max(0, ms));
  return () => clearTimeout(t);
}

export function updateBytes(update: ExecUpdate["update"]): Uint8Array {
  return encodeBinary(ExecUpdateSchema, create(ExecUpdateSchema, { update }));
}

/** Deltas go to the Exec stream (if any) and to the session's followers, after the last committed record. */
function deltaRelay(s: SessionState, live: LiveTurn, out?: FrameSink) {
  return (chunk: string, done: boolean) => {
    const executionId = live.executionId;
    out?.updateFrame(deltaUpdateEnvelope(executionId, chunk, done));
    s.followers.delta(s.journal.head().seq, executionId, chunk, done);
  };
}
