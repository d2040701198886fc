/**
 * Turns the controller's outcomes into the session layer's typed failures, each with a message
 * that says what happened and what to do next.
 */
import { appendRefusalReason, describeRefusal, type AppendRefusal } from "../controller/errors.js";
import type { TurnOutcome } from "../controller/live-turn.js";
import type { ResumeOutcome } from "../controller/resume.js";
import { failure, type Failure, type FailureReason } from "./outcomes.js";

export function turnFailure(o: TurnOutcome): Failure | undefined {
  switch (o.kind) {
    case "completed":
    case "parked":
      return undefined;
    case "refused":
      return refusalFailure(o.refusal);
    case "failed":
      if (o.stopped) return refusalFailure(o.stopped);
      return failure(o.reason, turnFailureMessage(o.reason, o.message));
  }
}

/** What the caller is told about a turn that failed for `reason` (classified at the source). */
function turnFailureMessage(reason: FailureReason, message: string): string {
  switch (reason) {
    case "deadline_exceeded":
      return `the turn passed its deadline: ${message}`;
    case "canceled":
      return `the turn was canceled: ${message}`;
    case "missing_executor":
      return `${message}; the decision is kept: configure TOOL_EXECUTOR_URL, then Resume`;
    case "replay_diverged":
      return `${message}; the harness no longer matches the journal (an ERROR was journaled)`;
    case "compaction_refused":
      return `${message}; nothing was recorded for the compaction (an ERROR was journaled)`;
    default:
      return `the turn failed and an ERROR record was journaled: ${message}; Resume retries it`;
  }
}

/** Failures of a recovery that wrote nothing (or of its re-driven turn). */
export function resumeFailure(o: ResumeOutcome): Failure | undefined {
  switch (o.kind) {
    case "noop":
      return undefined;
    case "invalid":
      return o.incomplete
        ? failure("incomplete_invocation", `${o.detail}. Nothing was recovered: Exec again with all of the turn's inputs to run it as a new turn`)
        : failure("invalid_log", `the journal cannot be recovered as it stands: ${o.detail}`);
    case "mismatch":
      return failure("harness_mismatch", `${o.detail}; serve that harness (and version) again, or Exec a new turn`);
    case "diverged":
      return failure("replay_diverged", `${o.detail}; nothing was run or written`);
    case "describe_failed":
      // An error answer will be the same next time; no answer (timeout, disconnect) may not be.
      return o.answered
        ? failure("internal", `${o.detail}; nothing was run or written`)
        : failure("harness_unavailable", `${o.detail}; nothing was run or written: retry when the harness answers`);
    case "unplaceable":
      return failure("unplaceable", o.detail);
    case "inherited":
      return failure("inherited_intent", o.detail);
    case "redriven":
      return turnFailure(o.outcome);
  }
}

export function refusalFailure(r: AppendRefusal): Failure {
  return failure(appendRefusalReason(r), `${describeRefusal(r)}${refusalAdvice(r)}`);
}

function refusalAdvice(r: AppendRefusal): string {
  switch (r.reason) {
    case "conflict":
      return `; another writer advanced the log: read the session and retry with expected_last_seq ${r.head}`;
    case "fenced":
      return "; a newer placement owns the session: retry";
    case "too_large":
      return "; send large content by URI with a digest instead";
    case "invalid_event":
      return "";
  }
}

export function notFound(): Failure {
  return failure("session_not_found", "session not found: check the uid (ListSessions shows this tenant's sessions)");
}

export function busy(): Failure {
  return failure("session_busy", "another turn or recovery is running on this session: wait for it to finish, then retry");
}
