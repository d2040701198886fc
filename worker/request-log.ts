/**
 * One structured log line per RPC: request id, tenant, session, operation, outcome, duration, and
 * for a stream the time to its first message. The schema is documented in docs/observability.md
 * (a test keeps the two in step); the session object's `phase` lines share the request id.
 * Never message contents, config, tool arguments or tokens (docs/security.md).
 * Caller-caused outcomes (INVALID_ARGUMENT, NOT_FOUND, ABORTED, ...) log at info, not error.
 */
import { type Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { whenEnded } from "./call-end.js";
import { callerKey, logFieldsKey } from "./context.js";
import { logRpc } from "../objects/log-line.js";

// Written by objects/log-line.ts, where a session object writes the line of an Exec it answers itself.
export { logRpc, type RpcLine } from "../objects/log-line.js";

export const requestLog: Interceptor = (next) => async (req) => {
  const started = Date.now();
  const fields = { session: undefined as string | undefined };
  req.contextValues.set(logFieldsKey, fields);
  let firstMessageMs: number | undefined;
  const line = (code: Code | undefined) => {
    const caller = req.contextValues.get(callerKey);
    logRpc({
      requestId: caller.requestId,
      tenant: caller.tenant,
      session: fields.session ?? "",
      operation: req.method.name,
      code,
      durationMs: Date.now() - started,
      firstMessageMs,
    });
  };
  const call = next(req).then((res) => {
    if (!res.stream) return res;
    const inner = res.message;
    return {
      ...res,
      message: (async function* () {
        for await (const m of inner) {
          firstMessageMs ??= Date.now() - started;
          yield m;
        }
      })(),
    };
  });
  return whenEnded(call, (e) => {
    line(e === undefined ? undefined : ConnectError.from(e).code);
    return e;
  });
};
