/**
 * The harness SDK's failures. Everything is a `ConnectError` with a `Code` except
 * `ApprovalParkedError`, which docs/contract.md §6.2 names as a distinct typed error: harness code that
 * wants to tell a park apart from a failed call tests for it with `isApprovalParkedError`.
 * Used by the stream and serve modules; tested in test/node/sdk-harness/.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ApprovalRefSchema, type ApprovalRef } from "../../proto/gen/agentsessions/v1/common_pb.js";

/**
 * A REQUIRES_APPROVAL tool call parked the execution: the host recorded the request and no decision
 * exists yet. The pending `toolCall` rejects with it, and so does every later sink call of that
 * execution. Let it propagate out of `run`; the SDK has already told the host (EVENT_PARKED), and the
 * call resolves with its receipt when the host recovers the execution after a decision.
 */
export class ApprovalParkedError extends Error {
  readonly ref: ApprovalRef;

  constructor(ref: ApprovalRef) {
    super(`the execution is parked on approval of tool call ${ref.toolCallId} (request seq ${ref.requestSeq})`);
    this.name = "ApprovalParkedError";
    this.ref = create(ApprovalRefSchema, ref);
  }
}

export function isApprovalParkedError(e: unknown): e is ApprovalParkedError {
  return e instanceof ApprovalParkedError;
}

/** @internal The host closed the stream (StreamClose, or a TunnelError naming it). */
export function streamClosedError(reason: string): ConnectError {
  return new ConnectError(`the host closed the stream${reason ? `: ${reason}` : ""}`, Code.Canceled);
}

/** @internal The host canceled the execution with a Cancel frame. */
export function canceledError(reason: string): ConnectError {
  return new ConnectError(`the host canceled the execution${reason ? ` (${reason})` : ""}`, Code.Canceled);
}

/** @internal The socket carrying the stream is gone; the host leaves the execution interrupted. */
export function connectionLostError(): ConnectError {
  return new ConnectError("the connection to the host was lost", Code.Unavailable);
}

/** @internal A frame broke the Harness.Connect choreography (docs/contract.md §5.3): the execution fails. */
export function protocolError(message: string): ConnectError {
  return new ConnectError(message, Code.Internal);
}

/** @internal A sink call after `run` settled (the Go reference's ErrSinkClosed). */
export function sinkClosedError(): ConnectError {
  return new ConnectError("event sink is closed: the execution already finished", Code.FailedPrecondition);
}

/** The text of a failure, for END{FAILED}'s description: the harness's own message, never a stack. */
export function descriptionOf(e: unknown): string {
  if (e instanceof ConnectError) return e.rawMessage || "execution failed";
  if (e instanceof Error) return e.message || e.name || "execution failed";
  return typeof e === "string" && e !== "" ? e : "execution failed";
}
