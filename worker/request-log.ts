/**
 * One structured log line per RPC: request id, tenant, session, operation, outcome, duration, and
 * for a stream the time to its first message. The schema is documented in docs/observability.md
 * (a test keeps the two in step); the session object's `phase` lines share the request id.
 * Never message contents, config, tool arguments or tokens (docs/security.md).
 * Caller-caused outcomes (INVALID_ARGUMENT, NOT_FOUND, ABORTED, ...) log at info, not error.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { whenEnded } from "./call-end.js";
import { callerKey, logFieldsKey } from "./context.js";
import { logsAt, writeLogText } from "../objects/log-line.js";

const SERVER_FAULTS = new Set([Code.Internal, Code.Unknown, Code.DataLoss, Code.Unavailable]);

export interface RpcLine {
  requestId: string;
  tenant: string;
  session: string;
  operation: string;
  code: Code | undefined;
  durationMs: number;
  /** A server stream's first message (an Exec's Session frame comes after admission and placement). */
  firstMessageMs?: number;
}

/** Writes one RPC line; also used for requests refused before the router (worker/index.ts). */
export function logRpc(l: RpcLine): void {
  const level = l.code !== undefined && SERVER_FAULTS.has(l.code) ? "error" : "info";
  if (!logsAt(level)) return;
  writeLogText(
    level,
    JSON.stringify({
      level,
      msg: "rpc",
      request_id: l.requestId,
      tenant: l.tenant,
      session: l.session,
      operation: l.operation,
      outcome: l.code === undefined ? "ok" : Code[l.code],
      duration_ms: l.durationMs,
      ...(l.firstMessageMs === undefined ? {} : { first_message_ms: l.firstMessageMs }),
    }),
  );
}

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
