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

export const classifyFaults: Interceptor = (next) => async (req) => {
  const classify = (e: unknown): ConnectError => {
    if (e instanceof ConnectError) return e;
    const caller = req.contextValues.get(callerKey);
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
    console.log(JSON.stringify({ level: "error", msg: "fault", request_id: caller.requestId, operation: req.method.name, fault, at }));
    return internalError(e);
  };
  return whenEnded(next(req), (e) => (e === undefined ? undefined : classify(e)));
};
