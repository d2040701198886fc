/**
 * Where the host's structured log lines go (docs/observability.md): one JSON object per line,
 * written with the console method that matches its `level` field. The method is what the platform
 * files a line under: Workers Logs' level, `wrangler tail`, and `wrangler dev --log-level` (at
 * `warn`, which the test servers use, a line written with `console.log` is not shown at all, so an
 * `error` line written that way would be hidden exactly where it is needed: docs/platform.md P19).
 *
 * `LOG_LEVEL` (debug, info, warn or error; info by default) is the least level written: a line
 * below it is never built or handed to the console, so it costs nothing where nobody reads it.
 */
import { Code } from "@connectrpc/connect";

type Level = "error" | "warn" | "info" | "debug";

const RANK: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** The rank of the least level written: info until LOG_LEVEL says otherwise. */
let least = RANK.info;

/** The console method for a line's `level`: `error`, `warn`, `debug`, else `info`. */
export function consoleMethodOf(level: unknown): Level {
  return level === "error" || level === "warn" || level === "debug" ? level : "info";
}

/**
 * Sets the least level written from the LOG_LEVEL variable (any case, spaces around ignored;
 * unset or empty is info). Answers false for a value that is not a level, and info applies then.
 */
export function setLogLevel(value: string | undefined): boolean {
  const v = (value ?? "").trim().toLowerCase();
  const known = v === "" || v in RANK;
  least = known && v !== "" ? RANK[v as Level] : RANK.info;
  return known;
}

/** Whether a line at `level` is written: callers skip building a line that would be dropped. */
export function logsAt(level: unknown): boolean {
  return RANK[consoleMethodOf(level)] >= least;
}

/** Writes one structured line (already JSON) at `level`, unless LOG_LEVEL is above it. */
export function writeLogText(level: unknown, json: string): void {
  const method = consoleMethodOf(level);
  if (RANK[method] >= least) console[method](json);
}

/** Writes one structured line (an object of JSON fields) at its own `level`, unless LOG_LEVEL is above it. */
export function writeLogLine(line: Record<string, unknown>): void {
  const method = consoleMethodOf(line.level);
  if (RANK[method] >= least) console[method](JSON.stringify(line));
}

/** The unusable LOG_LEVEL this isolate has already warned about. */
let warnedFor: string | undefined;

/**
 * Applies `env.LOG_LEVEL` in this isolate: the Worker and every Durable Object class call it as
 * they start, since an object may run in an isolate of its own. A value that is not a level is
 * named in one `warn` line per isolate, and info applies.
 */
export function configureLogLevel(env: { LOG_LEVEL?: string }): void {
  if (setLogLevel(env.LOG_LEVEL) || warnedFor === env.LOG_LEVEL) return;
  warnedFor = env.LOG_LEVEL;
  writeLogLine({ level: "warn", msg: "config", ignored: ["LOG_LEVEL"], detail: "not one of debug, info, warn, error: info applies; fix the variable" });
}

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

/**
 * Writes one RPC line (docs/observability.md): the router's interceptor and the Worker's own
 * refusals write it (worker/request-log.ts), and a session object writes an Exec's when it
 * answers the stream itself (objects/exec-frames.ts).
 */
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
