/**
 * The log of a Runtime service backend (the pod runtime, the substrate bridge): one JSON line per
 * event on stdout, and one per RPC (the interceptor below) with the method, session, harness,
 * outcome and duration. Never a request body: the dialback token rides in Create, Restore and Fork
 * requests, so fields are picked, never dumped.
 * @internal Used by runtimes/pod and runtimes/substrate.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

export type RuntimeLog = (fields: Record<string, unknown>) => void;

export const stdoutLog: RuntimeLog = (fields) => {
  process.stdout.write(`${JSON.stringify({ ts: new Date().toISOString(), ...fields })}\n`);
};

const SERVER_FAULTS = new Set([Code.Internal, Code.Unknown, Code.DataLoss]);

export function rpcLog(log: RuntimeLog): Interceptor {
  return (next) => async (req) => {
    const started = Date.now();
    const line = (code: Code | undefined, worker?: string, error?: string) =>
      log({
        level: code !== undefined && SERVER_FAULTS.has(code) ? "error" : "info",
        msg: "rpc",
        method: req.method.name,
        ...subjectOf(req.message),
        outcome: code === undefined ? "ok" : Code[code],
        ...(worker ? { worker } : {}),
        ...(error ? { error } : {}),
        duration_ms: Date.now() - started,
      });
    try {
      const res = await next(req);
      const m = res.message as { worker?: unknown; $typeName?: string };
      line(undefined, !res.stream && typeof m.worker === "string" ? m.worker : undefined);
      return res;
    } catch (e) {
      const err = ConnectError.from(e);
      line(err.code, undefined, err.rawMessage);
      throw e;
    }
  };
}

/**
 * The session and harness a request is about, from the few fields that name them (for ForkMany,
 * the parent and the number of children).
 */
function subjectOf(message: unknown): { session?: string; harness?: string; children?: number } {
  const m = message as {
    harness?: unknown;
    spec?: { sessionUid?: string; harness?: string };
    incarnation?: { id?: string };
    ref?: { local?: string };
    childSessionUid?: unknown;
    children?: unknown;
  };
  const session = (typeof m.childSessionUid === "string" && m.childSessionUid) || m.spec?.sessionUid || m.incarnation?.id || m.ref?.local || undefined;
  const harness = (typeof m.harness === "string" && m.harness) || m.spec?.harness || undefined;
  const children = Array.isArray(m.children) ? m.children.length : undefined;
  return { ...(session ? { session } : {}), ...(harness ? { harness } : {}), ...(children !== undefined ? { children } : {}) };
}
