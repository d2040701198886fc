/**
 * How the substrate bridge classifies a failed ateapi call or attach (like
 * runtimes/http/http-runtime-error.ts on the host side): terminal or retryable, then the `Code`
 * the bridge answers the host with (docs/runtimes.md "The substrate bridge": errors). Every failure
 * leaves here as one `ConnectError` whose message names the address, the step and the actor, with
 * the original as `cause`. Retryable failures carry a retry delay the host's client reads.
 * @internal Used by ateapi-client.ts and attach.ts; tested in test/node/substrate/.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { RETRY_AFTER_MS_HEADER } from "../http/http-runtime-error.js";

export interface SubstrateFailure {
  /** The same call may succeed later (a lease conflict, no free worker, ateapi unreachable). */
  retryable: boolean;
  /** What the host is told to wait before retrying, when it is worth saying. */
  retryAfterMs?: number;
  /** The code the bridge answers with. */
  code: Code;
}

/** ateapi's codes (its control API's error table) as Runtime SPI outcomes. */
export function classifyAteapiFailure(e: unknown): SubstrateFailure {
  const err = ConnectError.from(e);
  switch (err.code) {
    case Code.NotFound: // no such actor or tag
    case Code.AlreadyExists: // the name is taken
    case Code.FailedPrecondition: // wrong state, missing template or atespace, clone from a foreign template
      return { retryable: false, code: err.code };
    case Code.Aborted: // another operation holds the actor's lease
      return { retryable: true, retryAfterMs: 500, code: Code.Aborted };
    case Code.ResourceExhausted: // no free worker
      return { retryable: true, retryAfterMs: 2_000, code: Code.ResourceExhausted };
    case Code.Unavailable: // unreachable, GOAWAY, a restarting replica
    case Code.DeadlineExceeded: // our per-call deadline passed
      return { retryable: true, retryAfterMs: 1_000, code: Code.Unavailable };
    default:
      // InvalidArgument (a request field the server does not know: is the bridge pinned to its API
      // generation?), Unauthenticated (the bridge's credentials), Internal and the rest: the bridge's
      // or the control plane's fault, not the host's to fix.
      return { retryable: false, code: Code.Internal };
  }
}

/**
 * The bridge's error for `step` (an ateapi method) on `subject` (an actor or tag name), e.g.
 * `ateapi http://api:443 ResumeActor agentsessions/sess-…: no free worker (retryable)`.
 */
export function ateapiError(address: string, step: string, subject: string, e: unknown): ConnectError {
  const err = ConnectError.from(e);
  const f = classifyAteapiFailure(err);
  let what = describe(err, address);
  if (err.code === Code.InvalidArgument) what = `refused as invalid: ${err.rawMessage} (is the bridge pinned to this server's API generation?)`;
  if (err.code === Code.Unauthenticated || err.code === Code.PermissionDenied)
    what = `refused the bridge's credentials: ${err.rawMessage} (check --ateapi-token-file)`;
  return withRetry(new ConnectError(`ateapi ${address} ${step} ${subject}: ${what}${f.retryable ? " (retryable)" : ""}`, f.code, undefined, undefined, err), f);
}

/** The bridge's error for an attach (the Dialback delivered through the router) that failed. */
export function attachError(router: string, actor: string, e: unknown): ConnectError {
  const err = ConnectError.from(e);
  let code: Code;
  let hint = "";
  switch (err.code) {
    case Code.FailedPrecondition: // the host refused the one-time token, or the harness module is broken
    case Code.InvalidArgument:
      code = Code.FailedPrecondition;
      break;
    case Code.Unauthenticated:
    case Code.PermissionDenied:
      code = Code.FailedPrecondition;
      hint = " (the actor agent wants the bridge's --attach-token)";
      break;
    case Code.Unimplemented: // HTTP 404: the router knows no such actor, or the actor serves no agent
      code = Code.FailedPrecondition;
      hint = " (does the template's image run the actor agent, runtimes/substrate/agent?)";
      break;
    default:
      // The router or the tunnel is unreachable, or the harness did not dial back in time.
      code = Code.Unavailable;
  }
  const retryable = code === Code.Unavailable;
  const message = `attach ${actor} through ${router}: ${describe(err, router)}${hint}${retryable ? " (retryable)" : ""}`;
  return withRetry(new ConnectError(message, code, undefined, undefined, err), { retryable, code, retryAfterMs: retryable ? 1_000 : undefined });
}

/** Whether a bridge error is worth retrying as is. */
export function isRetryableSubstrateError(e: unknown): boolean {
  return e instanceof ConnectError && (e.code === Code.Unavailable || e.code === Code.Aborted || e.code === Code.ResourceExhausted);
}

/** An unreachable address is said as such, with the address to check. */
function describe(err: ConnectError, address: string): string {
  if (err.code === Code.Unavailable && /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET|ETIMEDOUT|EAI_AGAIN/.test(err.rawMessage)) {
    return `unreachable (${err.rawMessage}): check the address ${address} and that the service runs`;
  }
  return err.rawMessage;
}

function withRetry(err: ConnectError, f: SubstrateFailure): ConnectError {
  if (f.retryAfterMs !== undefined) err.metadata.set(RETRY_AFTER_MS_HEADER, String(f.retryAfterMs));
  return err;
}
