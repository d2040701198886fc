/**
 * The innermost interceptor: an exception that is not a ConnectError (a Durable Object that threw,
 * a storage fault, a bug) leaves as INTERNAL "internal error", never as connect-es's UNKNOWN with
 * the raw message (docs/behaviour.md §4.12). One error-level line records the fault's kind
 * and the code location it came from, never its message; the request log line follows.
 */
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { whenEnded } from "./call-end.js";
import { callerKey } from "./context.js";
import { internalError } from "./errors.js";
import { writeLogLine } from "../objects/log-line.js";

export const classifyFaults: Interceptor = (next) => async (req) => {
  const requestId = req.contextValues.get(callerKey).requestId;
  return whenEnded(next(req), (e) => (e === undefined ? undefined : classifyFault(e, requestId, req.method.name)));
};

/** A ConnectError as it is; anything else INTERNAL, with one `fault` line (also for the stream routes). */
export function classifyFault(e: unknown, requestId: string, operation: string): ConnectError {
  if (e instanceof ConnectError) return e;
  // The error's name and the code location it came from; never its message, which may quote
  // whatever value it choked on.
  const fault = e instanceof Error ? e.name : typeof e;
  const at =
    e instanceof Error
      ? ((e.stack ?? "")
          .split("\n")
          .find((l) => l.trim().startsWith("at "))
          ?.trim()
          .slice(0, 200) ?? "")
      : "";
  writeLogLine({ level: "error", msg: "fault", request_id: requestId, operation, fault, at });
  return internalError(e);
}
