/**
 * One structured log line per RPC: request id, tenant, session, operation, outcome, duration.
 * Never message contents, config, tool arguments or tokens (BEHAVIOUR.md §6.1 logging rules).
 * Caller-caused outcomes (INVALID_ARGUMENT, NOT_FOUND, ABORTED, ...) log at info, not error.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { whenEnded } from "./call-end.js";
import { callerKey, logFieldsKey } from "./context.js";

const SERVER_FAULTS = new Set([Code.Internal, Code.Unknown, Code.DataLoss, Code.Unavailable]);

export interface RpcLine {
  requestId: string;
  tenant: string;
  session: string;
  operation: string;
  code: Code | undefined;
  durationMs: number;
}

/** Writes one RPC line; also used for requests refused before the router (worker/index.ts). */
export function logRpc(l: RpcLine): void {
  const level = l.code !== undefined && SERVER_FAULTS.has(l.code) ? "error" : "info";
  console.log(
    JSON.stringify({
      level,
      msg: "rpc",
      request_id: l.requestId,
      tenant: l.tenant,
      session: l.session,
      operation: l.operation,
      outcome: l.code === undefined ? "ok" : Code[l.code],
      duration_ms: l.durationMs,
    }),
  );
}

export const requestLog: Interceptor = (next) => async (req) => {
  const started = Date.now();
  const fields = { session: undefined as string | undefined };
  req.contextValues.set(logFieldsKey, fields);
  const line = (code: Code | undefined) => {
    const caller = req.contextValues.get(callerKey);
    logRpc({
      requestId: caller.requestId,
      tenant: caller.tenant,
      session: fields.session ?? "",
      operation: req.method.name,
      code,
      durationMs: Date.now() - started,
    });
  };
  return whenEnded(next(req), (e) => {
    line(e === undefined ? undefined : ConnectError.from(e).code);
    return e;
  });
};
