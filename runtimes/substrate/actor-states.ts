/**
 * What the bridge reads off an ateapi Actor (G3): its state, its current external snapshot (the
 * handle a memory fork compares), its worker, and the compute state the Runtime service reports for
 * it (docs/runtimes.md "The substrate bridge": RUNNING is LIVE, SUSPENDED and PAUSED are COLD,
 * CRASHED is TERMINATED, absent or anything else NONE).
 * @internal Used by actors.ts and memory-fork.ts.
 */
import { ComputeState } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { ActorState, SnapshotContentScope, type Actor } from "../../proto/gen/ateapi/control_pb.js";

export function stateOf(a: Actor): ActorState {
  return a.status?.state ?? ActorState.UNSPECIFIED;
}

/** "RUNNING", "SUSPENDED", ... for messages. */
export function stateName(a: Actor | ActorState): string {
  const s = typeof a === "number" ? a : stateOf(a);
  return ActorState[s] ?? `state ${s}`;
}

/** Another operation is moving the actor: the caller should retry once it settled. */
export function isTransitional(a: Actor): boolean {
  const s = stateOf(a);
  return s === ActorState.RESUMING || s === ActorState.SUSPENDING || s === ActorState.PAUSING || s === ActorState.DELETING || s === ActorState.REVERTING;
}

/** The actor's current durable snapshot, "" when it has none. */
export function snapshotUriOf(a: Actor): string {
  return a.status?.externalSnapshot?.snapshotUri ?? "";
}

/** Whether the actor's snapshot holds memory (a DATA-scope snapshot cold-boots on restore). */
export function snapshotHoldsMemory(a: Actor): boolean {
  return a.status?.externalSnapshot?.contentScope !== SnapshotContentScope.DATA;
}

/** The worker pod the actor runs on, "" when none is assigned. */
export function workerOf(a: Actor): string {
  return a.status?.workerAssignment?.workerPod ?? "";
}

export function crashOf(a: Actor): string {
  return a.status?.crash?.message || "no reason recorded";
}

export function computeStateOf(a: Actor | undefined): ComputeState {
  if (!a) return ComputeState.COMPUTE_NONE;
  switch (stateOf(a)) {
    case ActorState.RUNNING:
      return ComputeState.COMPUTE_LIVE;
    case ActorState.SUSPENDED:
    case ActorState.PAUSED:
      return ComputeState.COMPUTE_COLD;
    case ActorState.CRASHED:
      return ComputeState.COMPUTE_TERMINATED;
    default:
      return ComputeState.COMPUTE_NONE;
  }
}
