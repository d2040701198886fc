/**
 * The request a Durable Object method serves, for its log lines (docs/observability.md): one
 * Exec flow's lines share one request id. The Worker passes the id with the call; the object runs
 * the call inside `withRequestId`, and everything the call starts, including a turn that goes on
 * streaming after the method returned, reads it with `currentRequestId`. AsyncLocalStorage
 * (nodejs_compat in workerd, native in Node) keeps interleaved calls apart.
 *
 * The same context times the phases of the work (`timePhase`): each timed call writes one
 * `phase` line with its duration, joined to the Worker's `rpc` line by the request id, and adds
 * to the request's totals (`phaseTotals`) for a line that sums them up. The model provider
 * (objects/models/timed.ts) and the tool executor (objects/tools/executor.ts) are timed here;
 * admission, placement and append are timed where the session core does them.
 * Test: test/node/session/request-context.test.ts.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { writeLogLine } from "./log-line.js";

/** The phases of an RPC's work in a session object, as named in the log lines. */
export type Phase = "admission" | "placement" | "model" | "tool" | "append";

interface RequestContext {
  requestId: string;
  totals: Map<Phase, { count: number; ms: number }>;
}

const store = new AsyncLocalStorage<RequestContext>();

export function withRequestId<T>(requestId: string, f: () => T): T {
  return requestId ? store.run({ requestId, totals: new Map() }, f) : f();
}

/** The request id of the call being served, or "" outside one. */
export function currentRequestId(): string {
  return store.getStore()?.requestId ?? "";
}

// A type, not an interface, so that it is a Record<string, unknown> (objects/log-line.ts).
export type PhaseLine = {
  level: "info";
  msg: "phase";
  request_id: string;
  phase: Phase;
  duration_ms: number;
  outcome: "ok" | "error";
};

export interface PhaseOptions {
  /** Where the line goes; one JSON object per line on the console by default. */
  log?: (line: PhaseLine) => void;
  now?: () => number;
}

/**
 * Runs `f` as one `phase` of the current request: logs its duration and outcome (never its
 * arguments or result) and adds it to the request's totals. Outside a request it only runs `f`.
 * Durations are wall time; in workerd the clock moves only across I/O, which is what the timed
 * phases wait on.
 */
export async function timePhase<T>(phase: Phase, f: () => Promise<T>, o: PhaseOptions = {}): Promise<T> {
  const ctx = store.getStore();
  if (!ctx) return f();
  const now = o.now ?? Date.now;
  const started = now();
  let outcome: PhaseLine["outcome"] = "error";
  try {
    const value = await f();
    outcome = "ok";
    return value;
  } finally {
    const ms = now() - started;
    const t = ctx.totals.get(phase) ?? { count: 0, ms: 0 };
    ctx.totals.set(phase, { count: t.count + 1, ms: t.ms + ms });
    const line: PhaseLine = { level: "info", msg: "phase", request_id: ctx.requestId, phase, duration_ms: ms, outcome };
    (o.log ?? writeLogLine)(line);
  }
}

/** The current request's time per phase so far, as log fields: `{model_ms, model_calls, tool_ms, …}`. */
export function phaseTotals(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [phase, t] of store.getStore()?.totals ?? []) {
    out[`${phase}_ms`] = t.ms;
    out[`${phase}_calls`] = t.count;
  }
  return out;
}
