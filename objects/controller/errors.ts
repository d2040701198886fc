/**
 * The controller's own failure conditions (docs/behaviour.md §2). They stay inside the Durable Object:
 * a turn's error is classified once, by `classifyTurnError`, into the code its ERROR record
 * carries and the reason the session layer reports (worker/errors.ts maps that reason to the
 * same code on the wire; test/node/controller/turn-errors.test.ts pins that they agree).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { AppendResult } from "../journal/journal.js";
import type { FailureReason } from "../session/outcomes.js";

export type AppendRefusal = Extract<AppendResult, { ok: false }>;

/** An append of this turn was refused (stale fence, CAS conflict, too large): the turn stops. */
export class AppendRefusedError extends Error {
  constructor(readonly refusal: AppendRefusal) {
    super(describeRefusal(refusal));
    this.name = "AppendRefusedError";
  }
}

/** A sink method was called after the execution's Run returned (ErrSinkClosed). */
export class SinkClosedError extends Error {
  constructor() {
    super("event sink is closed: the execution already finished");
    this.name = "SinkClosedError";
  }
}

/** The model provider failed after MODEL_CALL was recorded; the call stays unanswered. */
export class ModelProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ModelProviderError";
  }
}

/** A harness asked for a compaction the host cannot write (docs/history.md); the turn fails FAILED_PRECONDITION. */
export class CompactionRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CompactionRefusedError";
  }
}

/** The turn's deadline passed or it was canceled. */
export class TurnInterruptedError extends Error {
  constructor(
    readonly why: "deadline" | "canceled",
    message: string,
    /** For a cancel, the reason recorded in LIFECYCLE(CANCEL): USER, TIMEOUT or INTERNAL. */
    readonly reason = "",
  ) {
    super(message);
    this.name = "TurnInterruptedError";
  }
}

export function describeRefusal(r: AppendRefusal): string {
  switch (r.reason) {
    case "conflict":
      return `seq conflict: expected head ${r.expected}, journal head is ${r.head}`;
    case "fenced":
      return `stale fencing token ${r.fence}: superseded by fence ${r.current}`;
    case "too_large":
      return `event ${r.index} is ${r.bytes} bytes, over the ${r.limit}-byte limit`;
    case "invalid_event":
      return `event ${r.index} cannot be journaled: ${r.detail}`;
  }
}

/** Replay or recovery saw the harness ask for something other than what the journal recorded. */
export class ReplayDivergedError extends Error {
  constructor(
    readonly seq: bigint,
    readonly reason: string,
  ) {
    super(seq > 0n ? `replay diverged at seq ${seq}: ${reason}` : `replay diverged: ${reason}`);
    this.name = "ReplayDivergedError";
  }
}

/** The journal cannot be replayed or recovered as it stands (ErrInvalidExecutionLog). */
export class InvalidLogError extends Error {
  constructor(
    readonly detail: string,
    /** An invocation whose inputs were only partly committed (ErrIncompleteInvocation). */
    readonly incomplete = false,
  ) {
    super(detail);
    this.name = "InvalidLogError";
  }
}

/** The harness serving a recorded execution is not the one that ran it (name or version). */
export class HarnessMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HarnessMismatchError";
  }
}

/**
 * The harness a recorded execution needs is served but did not describe itself (checklist §8.13 #88): its
 * cause is kept. `answered`: it answered with an error (not a timeout or a lost connection), which
 * retrying will not change (checklist §8.16 #150).
 */
export class HarnessDescribeError extends Error {
  readonly answered: boolean;
  constructor(name: string, cause: unknown) {
    super(`harness "${name}" did not describe itself: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "HarnessDescribeError";
    this.answered = cause instanceof ConnectError && cause.code !== Code.Unavailable;
  }
}

/** A host-executed call refused before its intent was recorded (unmediated, no key, bad args). Latched. */
export class ToolCallRefusedError extends Error {
  constructor(
    readonly kind: "unmediated" | "missing_key" | "invalid_args" | "invalid_approval_call" | "approval_unavailable",
    message: string,
  ) {
    super(message);
    this.name = "ToolCallRefusedError";
  }
}

/** No tool executor is configured: the intent is recorded and the call fails closed. */
export class MissingToolExecutorError extends Error {
  constructor() {
    super("no tool executor configured on this host (set TOOL_EXECUTOR_URL): the call was not run");
    this.name = "MissingToolExecutorError";
  }
}

/** The executor answered with a failure (or could not be reached). The harness may handle it. */
export class ToolExecutionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ToolExecutionError";
  }
}

/** A REQUIRES_APPROVAL call parked its turn: nothing more is written until a decision and recovery. */
export class ApprovalParkedError extends Error {
  constructor(readonly ref: { executionId: string; toolCallId: string; requestSeq: bigint }) {
    super(`the turn is parked on approval of tool call ${ref.toolCallId} (request seq ${ref.requestSeq})`);
    this.name = "ApprovalParkedError";
  }
}

/** Recovery would re-drive a tool intent copied from a fork parent (it ran, or may have, there). */
export class InheritedToolIntentError extends Error {
  constructor(seq: bigint) {
    super(
      `the interrupted tool call at seq ${seq} was inherited from the fork parent, so re-driving it could repeat the parent's effect: fork at or after the TOOL_RESULT, or Exec a new turn`,
    );
    this.name = "InheritedToolIntentError";
  }
}

/**
 * A turn's error, classified once where it happens: `code` is what the journal's ERROR record says,
 * `reason` what the caller is told (worker/errors.ts maps it to the same code), `message` the
 * error's own text.
 */
export interface TurnError {
  code: Code;
  reason: FailureReason;
  message: string;
}

export function classifyTurnError(e: unknown): TurnError {
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof AppendRefusedError) return { code: Code.Aborted, reason: appendRefusalReason(e.refusal), message };
  if (e instanceof TurnInterruptedError) {
    return e.why === "deadline" ? { code: Code.DeadlineExceeded, reason: "deadline_exceeded", message } : { code: Code.Canceled, reason: "canceled", message };
  }
  if (e instanceof ReplayDivergedError) return { code: Code.FailedPrecondition, reason: "replay_diverged", message };
  if (e instanceof MissingToolExecutorError) return { code: Code.FailedPrecondition, reason: "missing_executor", message };
  if (e instanceof CompactionRefusedError) return { code: Code.FailedPrecondition, reason: "compaction_refused", message };
  // docs/behaviour.md §4.12 note: a refused call inside a turn (ToolCallRefusedError) fails the turn
  // INTERNAL, with nothing recorded for the call; so does anything else a harness or model throws.
  return { code: Code.Internal, reason: "turn_failed", message };
}

export function appendRefusalReason(r: AppendRefusal): FailureReason {
  switch (r.reason) {
    case "conflict":
      return "cas_conflict";
    case "fenced":
      return "fenced";
    case "too_large":
      return "event_too_large";
    case "invalid_event":
      return "invalid_event";
  }
}
