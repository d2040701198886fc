/**
 * Suspend, Cancel and DeleteSession (docs/behaviour.md §4.4, §4.8; docs/design.md §7).
 *
 * Suspend never interrupts a turn (ABORTED while one runs). Cancel stops the running execution
 * (END{CANCELED} + LIFECYCLE(CANCEL), so Resume never re-drives it), or closes an interrupted one
 * the same way. Delete stops the session's compute on its runtime backend (on substrate: the actor
 * and a fork child's tag), then erases the session's storage after its tenant's Directory has kept
 * a tombstone with the final chain head, so an auditor can tell deletion from loss.
 * @internal
 */
import { ComputeState, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { TurnInterruptedError } from "../controller/errors.js";
import { endEvent } from "../controller/events.js";
import { latestExecution } from "../controller/execution-log.js";
import { notFound, refusalFailure } from "./failures.js";
import { lifecycleEvent, Lifecycle_Kind } from "../controller/events.js";
import { failure, success, type Failure, type Outcome } from "./outcomes.js";
import type { SessionState } from "./state.js";

/** Cancel reasons the contract names (docs/contract.md §9). */
const CANCEL_REASONS = new Set(["USER", "TIMEOUT", "INTERNAL"]);

export async function suspendSession(s: SessionState): Promise<Outcome<Session>> {
  if (!s.exists()) return notFound();
  if (s.live) return failure("session_busy", "a turn is running on this session: Suspend never interrupts one; retry when it ends (or Cancel it)");
  const live = s.takeGuard();
  try {
    const runtime = await s.runtimeFor(s.meta.load()!.statics.harness);
    const inc = { id: s.uid, worker: "", address: "", runtime: runtime.name, fence: s.journal.fence() };
    let ref;
    try {
      ref = await runtime.snapshot(inc, "EXTERNAL");
    } catch (e) {
      return failure(
        "internal",
        `the ${runtime.name} runtime could not snapshot the session (${e instanceof Error ? e.message : "error"}); nothing was journaled`,
      );
    }
    if (runtime !== s.runtime) s.meta.setPlacement(ComputeState.COMPUTE_COLD);
    const marker = lifecycleEvent(Lifecycle_Kind.LIFECYCLE_SUSPEND, {
      snapshotLocal: ref.local,
      snapshotExternalUri: ref.externalUri,
      snapshotMemory: ref.memory,
      snapshotSealed: ref.sealed,
    });
    const r = s.append([marker], { fence: 0n, mintFence: true });
    if (!r.ok) return refusalFailure(r);
    s.release(live);
    return success(s.render());
  } finally {
    s.release(live);
    await s.reports.afterChange();
  }
}

/**
 * Cancels the running execution (or the named one). The running turn journals END{CANCELED} and
 * LIFECYCLE(CANCEL) itself and its Exec stream ends CANCELLED; Cancel returns once it has.
 */
export async function cancelSession(s: SessionState, executionId: string, reason: string): Promise<Outcome<Session>> {
  if (!s.exists()) return notFound();
  const why = reason || "USER";
  if (!CANCEL_REASONS.has(why)) return failure("invalid_request", `reason must be USER, TIMEOUT or INTERNAL (got ${JSON.stringify(reason.slice(0, 40))})`);
  const live = s.live;
  if (live) {
    // A turn still in admission has no execution id yet: it is canceled before it writes anything.
    if (executionId && live.executionId !== "" && executionId !== live.executionId) {
      return failure("not_running", `execution ${executionId} is not the one running on this session (${live.executionId} is): nothing was canceled`);
    }
    live.abort.abort(new TurnInterruptedError("canceled", `canceled (${why})`, why));
    await live.done;
    return success(s.render());
  }
  // Nothing running: close an interrupted execution so Resume will not re-drive it.
  const parsed = s.parsedLog();
  const latest = parsed.ok ? latestExecution(parsed) : undefined;
  if (!latest || latest.endState !== undefined || (executionId && executionId !== latest.id)) {
    return failure("not_running", "nothing to cancel: no execution of this session is running or interrupted");
  }
  const r = s.append([endEvent(latest.id, "CANCELED"), lifecycleEvent(Lifecycle_Kind.LIFECYCLE_CANCEL, { detail: why })], { fence: 0n, mintFence: true });
  await s.reports.afterChange();
  return r.ok ? success(s.render()) : refusalFailure(r);
}

/**
 * Erases the session. Compute it placed on a runtime backend is stopped first (a backend that
 * cannot stop it refuses the Delete, so no compute or retention pin outlives its session); then
 * the Directory keeps a tombstone with the final head, and every byte of the session's storage
 * goes; afterwards the uid answers NOT_FOUND everywhere.
 */
export async function deleteSession(s: SessionState, tombstone: (final: Session, headHash: string) => Promise<void>): Promise<Outcome<Session>> {
  if (!s.exists()) return notFound();
  if (s.live) return failure("session_busy", "a turn is running on this session: Cancel it (or wait for it to end), then delete");
  const final = s.render();
  // Held until the storage is gone (and taken after the final state is rendered, which reports a
  // held guard as RUNNING), so nothing that checks the guard (Exec, Resume, Suspend, Approve)
  // starts on a session that is being erased; SessionHost answers NOT_FOUND for an operation that
  // was already past its checks (test/node/fuzz/regressions.test.ts).
  const live = s.takeGuard();
  try {
    const kept = await stopCompute(s);
    if (kept) return kept;
    await tombstone(final, s.journal.head().hash);
    await s.d.erase();
    s.forget();
    return success(final);
  } finally {
    s.release(live);
  }
}

/** Stops what the session's own placements left on its runtime backend (nothing for the built-in runtime). */
async function stopCompute(s: SessionState): Promise<Failure | undefined> {
  const placed = s.meta.load()!.placement;
  if (placed === undefined || placed === ComputeState.COMPUTE_NONE || placed === ComputeState.COMPUTE_TERMINATED) return undefined;
  const runtime = await s.runtimeFor(s.meta.load()!.statics.harness);
  if (runtime === s.runtime) return undefined;
  try {
    await runtime.stop({ id: s.uid, worker: "", address: "", runtime: runtime.name, fence: s.journal.fence() });
  } catch (e) {
    return failure(
      "harness_unavailable",
      `the ${runtime.name} runtime could not stop the session's compute (${e instanceof Error ? e.message : "error"}); nothing was deleted: retry, so that none is left behind`,
    );
  }
  s.meta.setPlacement(ComputeState.COMPUTE_TERMINATED);
  return undefined;
}
