/**
 * The two state axes a session's journal implies (BEHAVIOUR.md §1.7), folded record by record
 * inside the append transaction.
 *
 * compute_state: ordinary records -> LIVE; SUSPEND and FORK -> COLD; RESUME -> LIVE; approval
 * request/decision, END{CANCELED} and other lifecycle kinds leave it unchanged.
 * exec_state: EXECUTION_START opens a turn (RUNNING); END{COMPLETED|CANCELED|FAILED} and ERROR
 * close it; an APPROVAL_REQUEST parks it (AWAITING) until its receipt. Whether a RUNNING turn is
 * really running is the live guard's call (session-view.ts).
 */
import { EventKind, Lifecycle_Kind, type Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState } from "../../proto/gen/agentsessions/v1/session_pb.js";

export interface States {
  computeState: ComputeState;
  execState: ExecState;
}

export function projectEvent(s: States, ev: Event): States {
  return { computeState: nextCompute(s.computeState, ev), execState: nextExec(s.execState, ev) };
}

export function projectEvents(s: States, events: Iterable<Event>): States {
  let out = s;
  for (const ev of events) out = projectEvent(out, ev);
  return out;
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
      return ExecState.EXEC_FAILED;
    case EventKind.EVENT_APPROVAL_REQUEST:
      return ExecState.EXEC_AWAITING;
    case EventKind.EVENT_TOOL_RESULT:
      // A receipt resolves a parked gate; the turn continues.
      return cur === ExecState.EXEC_AWAITING ? ExecState.EXEC_RUNNING : cur;
    default:
      return cur;
  }
}
