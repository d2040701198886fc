/**
 * Errors in words a person in a browser can act on: the Connect code, the server's message (minus
 * advice meant for the command line) and what to do here. Also the plain meaning of the codes an
 * ERROR record carries (docs/behaviour.md, the error table). Used by notices.ts and the timeline.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { codeName } from "../sdk/client.js";

export interface PersonError {
  /** The wire name: "failed_precondition", or "network" when no answer came. */
  code: string;
  /** The server's message, without hints for the CLI. */
  message: string;
  /** What to do next, in this page. */
  advice: string;
}

// Hints the server adds for agentctl users; the page gives its own advice instead.
const CLI_HINTS = [/\s*\(agentctl:[^)]*\)/g, /\s*\(pass --token[^)]*\)/g];

const ADVICE: Partial<Record<Code, string>> = {
  [Code.Unauthenticated]: "Paste a bearer token into the Token field at the top of the page.",
  [Code.PermissionDenied]: "Your token lacks the role this needs: ask for a token with it.",
  [Code.NotFound]: "It may have been deleted, or belong to another tenant: go back to the sessions list.",
  [Code.Aborted]: "Something else changed the session at the same moment: the page reloads it; try again.",
  [Code.ResourceExhausted]: "A limit was reached: wait a moment and try again.",
  [Code.Unavailable]: "The host could not do it just now: try again in a moment.",
  [Code.DeadlineExceeded]: "It took too long: try again.",
  [Code.Unimplemented]: "This host does not offer that operation.",
  [Code.Internal]: "The host failed: the server's log has the details (by request id).",
};

export function personError(e: unknown): PersonError {
  if (isNetworkFailure(e)) {
    return { code: "network", message: "no answer from the server", advice: "Is the host running? The page keeps trying on its own." };
  }
  const err = ConnectError.from(e);
  let message = err.rawMessage;
  for (const hint of CLI_HINTS) message = message.replace(hint, "");
  return { code: codeName(err.code), message, advice: ADVICE[err.code] ?? "" };
}

/** "Approve failed: failed_precondition: … Try …" in one line. */
export function errorLine(action: string, e: unknown): string {
  const p = personError(e);
  const sep = /[.!?:]$/.test(p.message) ? " " : ". ";
  return `${action} failed: ${p.code}: ${p.message}${p.advice ? sep + p.advice : ""}`;
}

/** fetch() rejects with a TypeError when nothing answered; connect-web wraps it as unavailable/unknown. */
function isNetworkFailure(e: unknown): boolean {
  const err = e instanceof ConnectError ? e : undefined;
  const cause = err ? err.cause : e;
  return cause instanceof TypeError && /fetch|network|load failed/i.test(cause.message);
}

const CODE_WORDS: Record<number, string> = {
  [Code.Canceled]: "the turn was canceled (by a caller or Cancel)",
  [Code.Unknown]: "an error the host could not classify",
  [Code.InvalidArgument]: "the request or an event was malformed",
  [Code.DeadlineExceeded]: "the turn's deadline passed before it finished",
  [Code.NotFound]: "something it needed does not exist",
  [Code.AlreadyExists]: "it already exists",
  [Code.PermissionDenied]: "the caller lacks the role for it",
  [Code.ResourceExhausted]: "a size or rate limit was reached",
  [Code.FailedPrecondition]: "the session's state did not allow it (for example a replay that diverged, or no tool executor)",
  [Code.Aborted]: "it collided with a concurrent change (stale head or fence)",
  [Code.OutOfRange]: "a value was out of range",
  [Code.Unimplemented]: "the host does not implement it",
  [Code.Internal]: "the harness or the model failed during the turn",
  [Code.Unavailable]: "a harness, model or backend could not be reached",
  [Code.DataLoss]: "data was lost or corrupted",
  [Code.Unauthenticated]: "the caller was not authenticated",
};

/** "internal: the harness or the model failed during the turn" for an ERROR record's code. */
export function codeInWords(code: number): string {
  const name = code in Code ? codeName(code as Code) : `code ${code}`;
  const words = CODE_WORDS[code];
  return words ? `${name}: ${words}` : name;
}
