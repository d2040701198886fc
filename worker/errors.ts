/**
 * A session-layer outcome as a ConnectError. The mapping itself (docs/behaviour.md §4.12) is
 * `codeFor` in objects/session/outcomes.ts, where the session object also uses it to end an Exec
 * stream it writes in the caller's protocol.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { codeFor, type Failure } from "../objects/session/outcomes.js";

export { codeFor };

export function connectErrorFrom(f: Failure): ConnectError {
  return new ConnectError(f.message, codeFor(f.reason));
}

/** Anything unrecognised: the wire says only "internal error"; the cause stays here. */
export function internalError(cause: unknown): ConnectError {
  return new ConnectError("internal error", Code.Internal, undefined, undefined, cause);
}
