/**
 * What the session layer answers across the Durable Object RPC boundary: a value, or a typed
 * failure. RPC drops error own-properties, so failures travel as data, and `codeFor` below maps
 * each reason to a Connect code in one switch (worker/errors.ts makes the ConnectError).
 */
import { Code } from "@connectrpc/connect";

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

/** The Connect code of a failure (docs/behaviour.md §4.12); each case names the row of the §4.12 table it implements. */
export function codeFor(reason: FailureReason): Code {
  switch (reason) {
    // "malformed request (empty uid/session where required, bad page token, ..., unknown harness name)"
    case "invalid_request":
    case "unknown_harness":
    case "invalid_event":
      return Code.InvalidArgument;
    // "unknown session uid (Get, Exec with uid, Approve, Resume/Suspend routing)"
    case "session_not_found":
      return Code.NotFound;
    // Our extension (docs/blobs.md): GetBlob for a digest the session's journal does not reference.
    case "blob_not_found":
      return Code.NotFound;
    // "CAS conflict, stale fence, overlapping Exec/Suspend/Resume on one session"
    case "cas_conflict":
    case "fenced":
    case "session_busy":
      return Code.Aborted;
    // "CanPlace refusal (ErrUnplaceable), ... invalid/ambiguous execution log, incomplete
    // invocation, ... harness/version mismatch"; and a divergence (listed for Suspend/Resume)
    case "unplaceable":
    // "memory fork at historical seq"; and a memory snapshot the backend can no longer restore or
    // clone (its actor gone or crashed, or superseded by a later one): a stale or superseded
    // snapshot is named in the message, and retrying the same call cannot help (docs/runtimes.md)
    case "snapshot_unusable":
    case "invalid_log":
    case "incomplete_invocation":
    case "harness_mismatch":
    case "replay_diverged":
    // Cancel of an execution that is not running (or nothing to cancel): a refusal, not an input error.
    case "not_running":
    // "approval blocked / invalid decision / approval unavailable / missing executor", "inherited tool intent"
    case "approval_blocked":
    case "invalid_decision":
    case "missing_executor":
    case "compaction_refused":
    case "inherited_intent":
    // "registered harness override", "retired harness"
    case "harness_pinned":
      return Code.FailedPrecondition;
    // "harness could not be described at admission (refused, reset, no answer within 10 s)"
    case "harness_unavailable":
      return Code.Unavailable;
    // "caller's own deadline or cancellation"
    case "deadline_exceeded":
      return Code.DeadlineExceeded;
    case "canceled":
      return Code.Canceled;
    // docs/design.md §4: an event over the row limit is refused before anything is journaled.
    case "event_too_large":
    // The tenant's concurrent-execution limit (docs/security.md): retry when a turn ends.
    case "tenant_busy":
    // Session metadata over MAX_STATICS_BYTES (objects/session/meta-store.ts): refused like an
    // oversized event, before SQLite would refuse the row (SQLITE_TOOBIG) as INTERNAL.
    case "metadata_too_large":
      return Code.ResourceExhausted;
    // A uid collision on create: astronomically unlikely, and the client can simply retry.
    case "session_exists":
      return Code.AlreadyExists;
    // Tail from a seq after the one the next commit will take (docs/follow.md): no such record.
    case "past_head":
      return Code.OutOfRange;
    // "harness or model failure mid-turn (ERROR journaled) ... anything else"
    case "turn_failed":
    case "internal":
      return Code.Internal;
  }
}
