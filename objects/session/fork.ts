/**
 * Fork at the session level (docs/behaviour.md §2.9, §4.7). The Worker orchestrates one fan-out
 * (worker/fork.ts): the parent describes its fork point (`forkSource`), every child is begun, fed
 * the parent's records 1..at_seq verbatim in pages (`forkSeed`), and sealed with
 * LIFECYCLE(FORK, "parent@<seq>") linked to the parent's hash at that seq (`forkFinish`). A child
 * becomes visible only when the Directory registers the whole fan-out; a failed fan-out discards
 * every child (`forkDiscard`). The parent is never written: every built-in harness is stateless.
 * @internal
 */
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { toBinary } from "@bufbuild/protobuf";
import { ComputeState, SessionSchema, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { createDirectoryRow } from "../directory/directory-row.js";
import type { DirectoryRow } from "../directory/directory-store.js";
import { unpackRecords } from "../journal/record-pack.js";
import { notFound, refusalFailure } from "./failures.js";
import { lifecycleEvent, Lifecycle_Kind } from "../controller/events.js";
import { isMemoryTier } from "./memory-restore.js";
import { INITIAL_STATES, staticsTooLarge, type SessionMeta } from "./meta-store.js";
import { failure, success, type Outcome } from "./outcomes.js";
import { projectRecords, type States } from "./projection.js";
import { migrateSession } from "./schema.js";
import { DESCRIBE_TIMEOUT_MS, type ServedHarness, type SessionState } from "./state.js";

/** What a child needs to know about its parent's fork point. */
export interface ForkSource {
  /** The resolved fork seq (head when the request said 0). */
  atSeq: bigint;
  /** The parent's static fields (project, harness, model, annotations, origin, ...). */
  statics: Uint8Array;
  /** The parent's projections as of at_seq, which the child inherits with its copied prefix. */
  states: States;
  /**
   * The children are clones of the parent's memory (the memory tier: memory-fork.ts), not replays:
   * the parent must checkpoint and clone them (`forkClone`) before they are sealed.
   */
  memory: boolean;
  /** The blobs records 1..at_seq reference: the children own them too (docs/blobs.md "Forks"). */
  blobs: string[];
}

export async function forkSource(s: SessionState, atSeq: bigint): Promise<Outcome<ForkSource>> {
  if (!s.exists()) return notFound();
  const head = s.journal.head().seq;
  const at = atSeq <= 0n ? head : atSeq;
  if (at > head)
    return failure("invalid_request", `at_seq ${atSeq} is past the session's head ${head}: fork at a seq between 1 and ${head}, or 0 for the head`);
  const name = s.meta.load()!.statics.harness;
  const served = await s.served(name);
  if (!served) return failure("harness_mismatch", `the session's harness "${name}" is not served here, so its children could not run`);
  const kind = await forkKind(s, name, served);
  if (!kind.ok) return kind;
  const memory = kind.value === "clone";
  // Checklist checklist §8.16 #143: refused before anything happens (no fence, no control-plane call, no child).
  if (memory && at !== head) {
    return failure(
      "unplaceable",
      `harness "${name}" keeps its state in memory, so its session forks only at its head (seq ${head}): a clone holds the memory as it is now, not as it was at seq ${at}; fork with at_seq 0 (or ${head}); nothing was forked`,
    );
  }
  // Inherited gates cannot be approved in the child: it starts with no pending approval.
  // Page by page: a journal past the memory budget is never held decoded whole.
  let projected = INITIAL_STATES;
  for (const page of s.cache.pages(1n, at)) projected = projectRecords(projected, page);
  const states = { ...projected, pending: undefined };
  const blobs = s.blobIndex.upTo(at).map((b) => b.sha256);
  return success({ atSeq: at, statics: toBinary(SessionSchema, s.meta.load()!.statics), states, memory, blobs });
}

/**
 * How the session forks: by replay, or by memory clone (the memory tier: a harness that requires
 * memory snapshots on a runtime that takes them). CanPlace on Fork (docs/runtimes.md "Capabilities
 * and CanPlace"; checklist §8.17 #171): a harness that requires memory snapshots on a runtime that
 * cannot take them could not resume its children from their journals, so its fork is refused before
 * any child exists. A built-in or tunnel harness that cannot be described now forks by replay (its
 * children report it when they run); a runtime backend's harness must be described, since only its
 * descriptor says whether its children are clones.
 */
async function forkKind(s: SessionState, name: string, served: ServedHarness): Promise<Outcome<"replay" | "clone">> {
  const startedMs = s.d.now();
  const runtime = served.runtime ?? s.runtime;
  let describeError: unknown;
  const descriptor = await (served.runtime
    ? served.runtime.describe(name, AbortSignal.timeout(DESCRIBE_TIMEOUT_MS))
    : s
        .describer()(name)
        .then((d) => d?.descriptor)
  ).catch((e: unknown) => {
    describeError = e;
    return undefined;
  });
  if (!descriptor) {
    if (!served.runtime) return success("replay");
    s.placement.log({ op: "fork", decision: "unavailable", harness: name, runtime: runtime.name, startedMs });
    const why = describeError instanceof Error ? describeError.message : "no answer";
    return failure(
      "harness_unavailable",
      `harness "${name}" cannot be described (${why}), so the fork cannot tell whether to clone or replay it; nothing was forked, retry`,
    );
  }
  if (isMemoryTier(descriptor, served.runtime)) return success("clone");
  const refused = s.placement.canPlace({ name, harness: served.harness, descriptor }, runtime);
  if (!refused) return success("replay");
  s.placement.log({ op: "fork", decision: "refused", harness: name, harnessId: descriptor.id, runtime: runtime.name, startedMs });
  return failure("unplaceable", `${refused}, so its children could not resume from their journals; nothing was forked`);
}

/** Creates the child's storage and metadata (not yet listed) and mints its first fence. */
export function forkBegin(s: SessionState, tenant: string, uid: string, statics: Session): Outcome<true> {
  if (s.exists()) return failure("session_exists", `session ${uid} already exists`);
  // The fork's labels and child name come from the ForkRequest: the same bound as CreateSession.
  const tooLarge = staticsTooLarge(statics);
  if (tooLarge) return failure("metadata_too_large", tooLarge);
  migrateSession(s.d.db);
  const now = s.d.now();
  const meta: SessionMeta = { tenant, uid, statics, createMs: now, updateMs: now, ...INITIAL_STATES };
  s.d.db.transaction(() => s.meta.insert(meta));
  s.journal.mintFence();
  return success(true);
}

/** Appends one page of the parent's prefix, verbatim; links are checked, hashes kept as written. */
export function forkSeed(s: SessionState, pack: Uint8Array): Outcome<true> {
  if (!s.exists()) return notFound();
  // The child's blob index comes with its prefix, in the same transaction (docs/blobs.md).
  const r = s.journal.seedPacked(pack, (seeded) => s.blobIndex.note(seeded));
  s.cache.reset();
  if (!r.ok) return failure("invalid_log", `fork prefix does not link at seq ${r.seq}: the parent changed under the fork; retry`);
  // A child has no followers before it is sealed and listed; were there any, they hear of it.
  if (s.followers.size > 0) s.followers.committed(unpackRecords(pack));
  return success(true);
}

/**
 * Seals the child: inherited projections, then LIFECYCLE(FORK) under the child's own fence. A
 * memory fork's child (`cloned`) already runs: its clone was resumed and dialled back as this
 * session, so its compute is LIVE. `atMs` is the fork's time, one for all its children, so
 * siblings' markers are the same record (same hash) and their common prefix includes it.
 */
export function forkFinish(s: SessionState, atSeq: bigint, states: States, cloned = false, atMs?: number): Outcome<{ session: Uint8Array; row: DirectoryRow }> {
  if (!s.exists()) return notFound();
  if (s.journal.head().seq !== atSeq)
    return failure("invalid_log", `fork prefix is incomplete: head ${s.journal.head().seq}, expected ${atSeq}; retry the fork`);
  const now = s.d.now();
  s.d.db.transaction(() => s.meta.setStates(states, now));
  s.meta.committed(states, now);
  const marker = lifecycleEvent(Lifecycle_Kind.LIFECYCLE_FORK, { detail: `parent@${atSeq}` });
  if (atMs !== undefined) marker.ts = timestampFromMs(atMs);
  const r = s.append([marker], { expectedSeq: atSeq, fence: s.journal.fence() });
  if (!r.ok) return refusalFailure(r);
  if (cloned) s.meta.setPlacement(ComputeState.COMPUTE_LIVE);
  const meta = s.meta.load()!;
  const session = s.render();
  const bytes = toBinary(SessionSchema, session);
  return success({ session: bytes, row: createDirectoryRow(session, s.journal.head(), meta, bytes) });
}

/** What one call builds of a child: begun (the first call), seeded with packed records, sealed (the last). */
export interface ForkChildStep {
  begin?: { tenant: string; uid: string; statics: Session };
  /** Runs of the parent's prefix, packed (journal/record-pack.ts), in seq order. */
  packs: Uint8Array[];
  seal?: { atSeq: bigint; states: States; cloned?: boolean; atMs?: number };
}

/**
 * A child's begin, seed and seal in as few Durable Object calls as the prefix allows (one, when it
 * fits in one call): worker/fork.ts sends the parent's prefix packed, once per child.
 */
export function forkChild(s: SessionState, step: ForkChildStep): Outcome<{ session: Uint8Array; row: DirectoryRow } | true> {
  if (step.begin) {
    const begun = forkBegin(s, step.begin.tenant, step.begin.uid, step.begin.statics);
    if (!begun.ok) return begun;
  }
  for (const pack of step.packs) {
    const seeded = forkSeed(s, pack);
    if (!seeded.ok) return seeded;
  }
  return step.seal ? forkFinish(s, step.seal.atSeq, step.seal.states, step.seal.cloned, step.seal.atMs) : success(true);
}

/** Erases a child of a fan-out that failed, so a refused fork leaves no phantom behind. */
export async function forkDiscard(s: SessionState): Promise<void> {
  await s.d.erase();
  s.forget();
}
