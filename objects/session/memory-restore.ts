/**
 * Where a session's compute comes back from, and what that means for the memory tier
 * (docs/runtimes.md "The memory tier"; docs/behaviour.md I4).
 *
 * A restore starts from the latest SUSPEND ref the session wrote itself: for a harness that keeps
 * its state in memory (RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT) on a runtime that snapshots memory,
 * that ref names the memory snapshot the backend must bring back, and a backend that cannot is
 * refused rather than replaced by a fresh incarnation. Once such a harness runs on restored memory
 * (after its own memory checkpoint, or as a memory fork's clone) its turns get an empty
 * Start.history: the memory already holds what the journal says, and replaying it would apply it
 * twice.
 * @internal Used by turns.ts and memory-fork.ts; tested in test/node/session/memory-tier.test.ts.
 */
import { create } from "@bufbuild/protobuf";
import { Resumability, type HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { SnapshotRefSchema, type SnapshotRef } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { Runtime } from "../../runtimes/runtime-spi.js";
import { Lifecycle_Kind } from "../controller/events.js";
import type { SessionState } from "./state.js";

/** The latest SUSPEND ref this session wrote itself; inherited refs name the parent and are skipped. */
export function ownSuspendRef(s: SessionState): SnapshotRef | undefined {
  const uid = s.uid;
  const found = s.cache.findLast(
    (e) => e.body.case === "lifecycle" && e.body.value.kind === Lifecycle_Kind.LIFECYCLE_SUSPEND && e.body.value.snapshotLocal === uid,
  );
  const b = found?.event.body;
  if (b?.case !== "lifecycle") return undefined;
  const v = b.value;
  return create(SnapshotRefSchema, { local: v.snapshotLocal, externalUri: v.snapshotExternalUri, memory: v.snapshotMemory, sealed: v.snapshotSealed });
}

/** Whether the harness keeps its state in memory and this runtime snapshots it: the memory tier. */
export function isMemoryTier(descriptor: HarnessDescriptor | undefined, runtime: Runtime | undefined): boolean {
  return descriptor?.capabilities?.resumability === Resumability.REQUIRES_MEMORY_SNAPSHOT && runtime?.capabilities().memorySnapshot === true;
}

/**
 * Whether a memory-tier harness now runs on memory its runtime restored: the session holds its own
 * memory checkpoint (every later turn runs on a restore of it), or it is a fork child, which for a
 * memory harness is always a clone of its parent's memory (replay forks of one are refused).
 */
export function runsOnRestoredMemory(s: SessionState, descriptor: HarnessDescriptor, runtime: Runtime | undefined): boolean {
  if (!isMemoryTier(descriptor, runtime)) return false;
  return s.meta.load()!.statics.parentUid !== "" || ownSuspendRef(s)?.memory === true;
}
