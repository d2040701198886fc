/**
 * What the session layer answers across the Durable Object RPC boundary: a value, or a typed
 * failure. RPC drops error own-properties, so failures travel as data and
 * worker/errors.ts maps each reason to a Connect code in one switch.
 */

export type FailureReason =
  | "invalid_request"
  | "unknown_harness"
  | "session_not_found"
  | "blob_not_found"
  | "session_exists"
  | "cas_conflict"
  | "fenced"
  | "session_busy"
  | "tenant_busy"
  | "deadline_exceeded"
  | "canceled"
  | "event_too_large"
  | "metadata_too_large"
  | "invalid_event"
  | "harness_unavailable"
  | "unplaceable"
  | "snapshot_unusable"
  | "invalid_log"
  | "incomplete_invocation"
  | "harness_mismatch"
  | "replay_diverged"
  | "not_running"
  | "approval_blocked"
  | "inherited_intent"
  | "invalid_decision"
  | "missing_executor"
  | "compaction_refused"
  | "harness_pinned"
  | "past_head"
  | "turn_failed"
  | "internal";

export interface Failure {
  ok: false;
  reason: FailureReason;
  /** Says what happened and what to do next; never contents, SQL or stacks. */
  message: string;
}

export type Outcome<T> = { ok: true; value: T } | Failure;

export function failure(reason: FailureReason, message: string): Failure {
  return { ok: false, reason, message };
}

export function success<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}
