/**
 * The state a session's journal implies (docs/behaviour.md §1.7), folded record by record inside the
 * append transaction.
 *
 * compute_state: ordinary records -> LIVE; SUSPEND and FORK -> COLD; RESUME -> LIVE; approval
 * request/decision, END{CANCELED} and other lifecycle kinds leave it unchanged.
 * exec_state: EXECUTION_START opens a turn (RUNNING); END{COMPLETED|CANCELED|FAILED} and ERROR
 * close it; an APPROVAL_REQUEST parks it (AWAITING) until its receipt. Whether a RUNNING turn is
 * really running is the live guard's call (session/render.ts).
 * pending: the approval request that has no decision yet (cleared by its decision or a new turn).
 */
import { EventKind, Lifecycle_Kind, type Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState } from "../../proto/gen/agentsessions/v1/session_pb.js";

export interface PendingGate {
  executionId: string;
  toolCallId: string;
  requestSeq: bigint;
  /** When it fails closed on its own (not journaled state: the alarm's schedule). */
  deadlineMs?: number;
}

export interface States {
  computeState: ComputeState;
  execState: ExecState;
  pending?: PendingGate;
}

export function projectRecord(s: States, seq: bigint, ev: Event): States {
  return { computeState: nextCompute(s.computeState, ev), execState: nextExec(s.execState, ev), pending: nextPending(s.pending, seq, ev) };
}

export function projectRecords(s: States, records: Iterable<{ seq: bigint; event: Event }>): States {
  let out = s;
  for (const r of records) out = projectRecord(out, r.seq, r.event);
  return out;
}

export function sameStates(a: States, b: States): boolean {
  return (
    a.computeState === b.computeState &&
    a.execState === b.execState &&
    a.pending?.requestSeq === b.pending?.requestSeq &&
    a.pending?.executionId === b.pending?.executionId
  );
}

function nextCompute(cur: ComputeState, ev: Event): ComputeState {
  switch (ev.kind) {
    case EventKind.EVENT_APPROVAL_REQUEST:
    case EventKind.EVENT_APPROVAL_RESULT:
      return cur;
    case EventKind.EVENT_END:
      // Closing a canceled execution places nothing (a cold fork child stays cold).
      return ev.body.case === "end" && ev.body.value.state === "CANCELED" ? cur : ComputeState.COMPUTE_LIVE;
    case EventKind.EVENT_LIFECYCLE: {
      const kind = ev.body.case === "lifecycle" ? ev.body.value.kind : Lifecycle_Kind.LIFECYCLE_UNSPECIFIED;
      if (kind === Lifecycle_Kind.LIFECYCLE_SUSPEND || kind === Lifecycle_Kind.LIFECYCLE_FORK) {
        return ComputeState.COMPUTE_COLD;
      }
      if (kind === Lifecycle_Kind.LIFECYCLE_RESUME) return ComputeState.COMPUTE_LIVE;
      return cur;
    }
    default:
      return ComputeState.COMPUTE_LIVE;
  }
}

function nextExec(cur: ExecState, ev: Event): ExecState {
  switch (ev.kind) {
    case EventKind.EVENT_EXECUTION_START:
      return ExecState.EXEC_RUNNING;
    case EventKind.EVENT_END: {
      const state = ev.body.case === "end" ? ev.body.value.state : "";
      if (state === "COMPLETED") return ExecState.EXEC_COMPLETED;
      if (state === "CANCELED") return ExecState.EXEC_CANCELED;
      return ExecState.EXEC_FAILED;
    }
    case EventKind.EVENT_ERROR:
      // An ERROR does not resolve a gate: a parked turn stays parked.
      return cur === ExecState.EXEC_AWAITING ? cur : ExecState.EXEC_FAILED;
    case EventKind.EVENT_APPROVAL_REQUEST:
      return ExecState.EXEC_AWAITING;
    case EventKind.EVENT_TOOL_RESULT:
      // A receipt resolves a parked gate; the turn continues.
      return cur === ExecState.EXEC_AWAITING ? ExecState.EXEC_RUNNING : cur;
    default:
      return cur;
  }
}

function nextPending(cur: PendingGate | undefined, seq: bigint, ev: Event): PendingGate | undefined {
  switch (ev.kind) {
    case EventKind.EVENT_APPROVAL_REQUEST:
      return ev.body.case === "approval" ? { executionId: ev.executionId, toolCallId: ev.body.value.toolCallId, requestSeq: seq } : cur;
    case EventKind.EVENT_APPROVAL_RESULT:
      return ev.body.case === "approvalResult" && cur && ev.body.value.requestSeq === cur.requestSeq ? undefined : cur;
    case EventKind.EVENT_EXECUTION_START:
    case EventKind.EVENT_END:
      return undefined;
    default:
      return cur;
  }
}
