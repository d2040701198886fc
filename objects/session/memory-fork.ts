/**
 * The parent's side of a memory fork (docs/behaviour.md §4.7; docs/runtimes.md "The memory tier").
 * A harness that keeps its state in memory (RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT) on a runtime
 * that snapshots memory forks by clone, not by replay, and only at the head: a clone holds the
 * memory as it is now. The Worker runs the fan-out (worker/fork.ts): it begins every child and
 * copies the prefix 1..at_seq into it, then asks the parent, which owns the placement, to
 *
 *   1. checkpoint itself once for the whole fan-out: the guard (a turn, Suspend, Resume or another
 *      fork running is ABORTED), admission (Describe and CanPlace on the runtime, as Exec),
 *      the head re-checked, a fresh fence (an older writer of the parent is fenced out),
 *      Snapshot(EXTERNAL), and SUSPEND{ref} appended with CAS on the fork seq, so a writer that
 *      committed meanwhile aborts the fork before any clone exists. A checkpoint that holds no
 *      memory snapshot is refused once recorded;
 *   2. clone every child from that one snapshot: one dialback per child (each clone dials back as
 *      its own session), then ForkMany, which is all or nothing. When its outcome is unknown (our
 *      timeout, the backend unreachable) each child's compute is stopped as well; Stop is
 *      idempotent, and on substrate it deletes the clone and its tag.
 *
 * and then seals every child with its FORK marker. A failure anywhere discards every child; the
 * parent's checkpoint is not rolled back: it is left COLD with its SUSPEND, and a retry forks at
 * the new head. `forkRelease` stops the clones of a fan-out that failed after they were made.
 * @internal Used by session/facade.ts; tested in test/node/session/memory-tier.test.ts and, against
 * the substrate bridge, test/node/integration/memory-tier.test.ts.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ComputeState, type SnapshotRef } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { Incarnation } from "../../runtimes/runtime-spi.js";
import { notFound, refusalFailure } from "./failures.js";
import { lifecycleEvent, Lifecycle_Kind } from "../controller/events.js";
import { isMemoryTier } from "./memory-restore.js";
import { failure, success, type Failure, type Outcome } from "./outcomes.js";
import type { PlacingRuntime, SessionState } from "./state.js";
import { writeLogLine } from "../log-line.js";

/** What a memory fork's clone step did: the seq of the parent's checkpoint (its SUSPEND). */
export interface ForkClone {
  checkpointSeq: bigint;
}

/** Checkpoints the parent at `atSeq` (its head) and clones `children` from that snapshot. */
export async function forkClone(s: SessionState, atSeq: bigint, children: readonly string[]): Promise<Outcome<ForkClone>> {
  if (!s.exists()) return notFound();
  if (s.live) {
    return failure("session_busy", "a turn, Suspend, Resume or another fork is running on this session: a memory fork checkpoints it, so retry when that ends");
  }
  const live = s.takeGuard();
  try {
    const harness = s.meta.load()!.statics.harness;
    const admitted = await s.placement.admit(harness);
    if (!admitted.ok) return admitted;
    const rt = admitted.value.served.runtime;
    if (!rt?.forkMany || !isMemoryTier(admitted.value.descriptor, rt)) {
      return failure(
        "unplaceable",
        `harness "${harness}" no longer forks by memory clone here (its descriptor or its runtime changed): fork again; nothing was forked`,
      );
    }
    const head = s.journal.head().seq;
    if (head !== atSeq) return advanced(head, atSeq);
    const fence = s.journal.mintFence();
    const startedMs = s.d.now();
    const inc: Incarnation = { id: s.uid, worker: "", address: "", runtime: rt.name, fence };
    let ref: SnapshotRef;
    try {
      ref = await rt.snapshot(inc, "EXTERNAL");
    } catch (e) {
      return failure("internal", `the ${rt.name} runtime could not checkpoint the parent (${messageOf(e)}); nothing was journaled or forked`);
    }
    s.meta.setPlacement(ComputeState.COMPUTE_COLD);
    const suspend = lifecycleEvent(Lifecycle_Kind.LIFECYCLE_SUSPEND, {
      snapshotLocal: ref.local,
      snapshotExternalUri: ref.externalUri,
      snapshotMemory: ref.memory,
      snapshotSealed: ref.sealed,
    });
    const r = s.append([suspend], { expectedSeq: atSeq, fence });
    if (!r.ok) return r.reason === "conflict" ? advanced(r.head, atSeq) : refusalFailure(r);
    const checkpointSeq = r.records[0]!.seq;
    const left = `the parent is left suspended (SUSPEND at seq ${checkpointSeq}): fork it again at its new head`;
    if (!ref.memory || !ref.externalUri) {
      return failure("unplaceable", `the ${rt.name} runtime's checkpoint of the parent holds no memory snapshot to clone; nothing was forked, and ${left}`);
    }
    const line = (decision: "placed" | "refused" | "unavailable" | "error") =>
      s.placement.log({ op: "fork", decision, harness, harnessId: admitted.value.descriptor.id, runtime: rt.name, startedMs });
    try {
      const dialbacks = await Promise.all(children.map((uid) => rt.dialback(harness, uid)));
      await rt.forkMany(
        ref,
        children.map((sessionUid, i) => ({ sessionUid, dialback: dialbacks[i] })),
        { sessionUid: s.uid, harness },
      );
    } catch (e) {
      const err = ConnectError.from(e);
      if (outcomeUnknown(err)) await stopChildren(s, rt, children);
      const f = cloneFailure(err, `${rt.name} runtime`, ref, left);
      line(f.reason === "snapshot_unusable" ? "refused" : f.reason === "harness_unavailable" ? "unavailable" : "error");
      return f;
    }
    line("placed");
    s.release(live);
    return success({ checkpointSeq });
  } finally {
    s.release(live);
    await s.reports.afterChange();
  }
}

/** Stops the clones of a fan-out that failed after they were made (their storage is discarded). */
export async function forkRelease(s: SessionState, children: readonly string[]): Promise<void> {
  if (!s.exists()) return;
  const rt = (await s.served(s.meta.load()!.statics.harness))?.runtime;
  if (rt) await stopChildren(s, rt, children);
}

function advanced(head: bigint, atSeq: bigint): Failure {
  return failure("cas_conflict", `the parent advanced to seq ${head} after the fork chose seq ${atSeq}: fork again at the new head; nothing was forked`);
}

/**
 * Whether a failed ForkMany may have left clones behind: the backend never answered (our timeout,
 * unreachable, cut) or failed internally. Its own refusals are all or nothing by contract, and an
 * ALREADY_EXISTS child is never ours to stop.
 */
function outcomeUnknown(err: ConnectError): boolean {
  return err.code === Code.Unavailable || err.code === Code.DeadlineExceeded || err.code === Code.Internal || err.code === Code.Unknown;
}

/**
 * A refusal naming the snapshot (FAILED_PRECONDITION: superseded, its parent woken or gone; a
 * retry of the same fork cannot help, since the parent's head moved), a retryable failure
 * (UNAVAILABLE), or anything else (INTERNAL). docs/behaviour.md lists a superseded source snapshot as
 * ABORTED; we answer FAILED_PRECONDITION because the fork point itself is gone (docs/runtimes.md).
 */
function cloneFailure(err: ConnectError, who: string, ref: SnapshotRef, left: string): Failure {
  if (err.code === Code.FailedPrecondition) {
    return failure(
      "snapshot_unusable",
      `the ${who} cannot clone the parent's memory snapshot ${ref.externalUri} (${err.rawMessage}); nothing was forked, and ${left}`,
    );
  }
  if (err.code === Code.Unavailable)
    return failure("harness_unavailable", `the ${who} could not clone the parent (${err.rawMessage}); nothing was forked, and ${left}`);
  return failure("internal", `the ${who} refused to clone the parent (${err.rawMessage}); nothing was forked, and ${left}`);
}

/** Stop for each child (idempotent on the backend); the uids of those that fail are logged, for an operator. */
async function stopChildren(s: SessionState, rt: PlacingRuntime, children: readonly string[]): Promise<void> {
  const results = await Promise.allSettled(children.map((id) => rt.stop({ id, worker: "", address: "", runtime: rt.name, fence: 0n })));
  const left = children.filter((_, i) => results[i]!.status === "rejected");
  if (left.length > 0) {
    (s.d.log ?? writeLogLine)({ level: "error", msg: "fork teardown", component: "placer", session: s.uid, left });
  }
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : "error";
}
