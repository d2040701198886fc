/**
 * How the HTTP runtime classifies a failed call: first terminal or retryable (with
 * `retryAfterMs` when the backend said so), then as a `Code` the host can map (docs/contract.md §6.1:
 * an unreachable runtime is UNAVAILABLE). Every failure leaves here as one `ConnectError` whose
 * message names the runtime and the operation, with the original as `cause`.
 * Imported by http-runtime.ts and runtime-fetch.ts; tested in test/node/pod/http-runtime.test.ts.
 * Runs in workerd: no Node imports.
 */
import { Code, ConnectError } from "@connectrpc/connect";

export interface RuntimeFailure {
  /** Trying the same call again later may succeed (the backend is down, busy or restarting). */
  retryable: boolean;
  /** The backend's Retry-After, when it sent one. */
  retryAfterMs?: number;
  /** The code the host sees: UNAVAILABLE for every retryable failure, else the backend's code. */
  code: Code;
}

/** Header on our errors carrying the retry delay, in milliseconds. */
export const RETRY_AFTER_MS_HEADER = "x-agentsessions-retry-after-ms";

/** Failures that a retry of the same call can fix. */
const RETRYABLE = new Set<Code>([
  Code.Unavailable, // unreachable (fetch rejected), HTTP 502/503/504/429, or the backend said so
  Code.DeadlineExceeded, // our per-call timeout passed: the backend is slow or hung
  Code.ResourceExhausted, // the backend is at capacity
  Code.Aborted, // a concurrent operation on the same session won; every Runtime RPC is idempotent
  Code.Internal, // HTTP 500: a backend fault, possibly transient
  Code.Unknown, // HTTP 500 without a Connect code
]);

/** Backend codes passed through as they are: they describe the request, so a retry cannot help. */
const TERMINAL_PASSTHROUGH = new Set<Code>([
  Code.InvalidArgument, // a malformed request (no session uid, no dialback, bad kind)
  Code.NotFound, // the backend does not host that harness
  Code.FailedPrecondition, // the incarnation is not in a state for this (e.g. pausing a stopped one)
  Code.AlreadyExists,
  Code.OutOfRange,
  Code.Unimplemented, // HTTP 404/501: the URL does not serve the Runtime service, or not this RPC
  Code.Unauthenticated, // the backend wants credentials this host does not send
  Code.PermissionDenied,
  Code.Canceled, // the caller gave up; not the backend's fault
]);

export function classifyRuntimeFailure(e: unknown): RuntimeFailure {
  const err = ConnectError.from(e);
  if (RETRYABLE.has(err.code)) {
    const retryAfterMs = retryAfterOf(err);
    return retryAfterMs === undefined ? { retryable: true, code: Code.Unavailable } : { retryable: true, retryAfterMs, code: Code.Unavailable };
  }
  // DataLoss and anything unrecognised: terminal, and the host's problem to report as internal.
  return { retryable: false, code: TERMINAL_PASSTHROUGH.has(err.code) ? err.code : Code.Internal };
}

/**
 * The error the host sees for `op` on the runtime at `target`, e.g.
 * `runtime http://pod:9400 Create: unreachable: connect ECONNREFUSED (retryable)`.
 */
export function httpRuntimeError(target: string, op: string, e: unknown): ConnectError {
  const err = ConnectError.from(e);
  const f = classifyRuntimeFailure(err);
  const hint = err.code === Code.Unimplemented ? " (does this URL serve agentsessions.edge.v1.Runtime?)" : "";
  const message = `runtime ${target} ${op}: ${err.rawMessage}${hint}${f.retryable ? " (retryable)" : ""}`;
  const metadata = new Headers();
  if (f.retryAfterMs !== undefined) metadata.set(RETRY_AFTER_MS_HEADER, String(f.retryAfterMs));
  return new ConnectError(message, f.code, metadata, undefined, err);
}

/**
 * The backend answered, but with something this host cannot use (an incarnation for another
 * session, an unknown compute state): a backend bug, terminal.
 */
export function badAnswerError(target: string, op: string, e: unknown): ConnectError {
  const err = ConnectError.from(e);
  return new ConnectError(`runtime ${target} ${op}: bad answer: ${err.rawMessage}`, Code.Internal, undefined, undefined, err);
}

/** True for failures that retrying the same call may fix (they all carry Code.Unavailable). */
export function isRetryableRuntimeError(e: unknown): boolean {
  return e instanceof ConnectError && e.code === Code.Unavailable;
}

/** The delay the backend asked for before a retry, if any. */
export function retryAfterMsOf(e: unknown): number | undefined {
  return e instanceof ConnectError ? retryAfterOf(e) : undefined;
}

function retryAfterOf(err: ConnectError): number | undefined {
  const ours = err.metadata.get(RETRY_AFTER_MS_HEADER);
  if (ours !== null && /^\d+$/.test(ours)) return Number(ours);
  return retryAfterFromHeader(err.metadata.get("retry-after"));
}

/** RFC 9110 Retry-After: delay-seconds (the HTTP-date form is rare from backends and ignored). */
export function retryAfterFromHeader(v: string | null): number | undefined {
  if (v === null || !/^\d{1,6}$/.test(v.trim())) return undefined;
  return Number(v.trim()) * 1000;
}
