/**
 * What every benchmark here shares: one `wrangler dev` with the bench routes on (BENCH=1), timers,
 * medians and percentiles, interleaved rounds, retries of wrangler dev's proxy 503s, session
 * builders and the summary line format (`bench <name> ratio=<x> target=<y>`). Every request goes
 * through the SDK's node:http fetch (sdk/node/http-fetch.ts), the floors' included, so a ratio
 * compares work, not HTTP clients. Benchmarks measure and print; they assert nothing.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { type DevServer, startDevServer } from "../scripts/dev-server.js";
import { SessionsClient } from "../sdk/client.js";
import { nodeFetch } from "../sdk/node/index.js";
import { bytesOf } from "../sdk/node/http-fetch.js";
import { STREAM_CALL, type StreamCall } from "../sdk/server-stream.js";

export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

export async function startBenchHost(vars: Record<string, string> = {}): Promise<{ server: DevServer; client: SessionsClient }> {
  // Building long sessions takes Execs of many inputs; no request-rate limit crowds the timings
  // (a very high one keeps its limiter call on the path, as in a deployment).
  const server = await startDevServer({
    vars: { BENCH: "1", MAX_INPUTS_PER_EXEC: "1000", RATE_LIMIT_PER_SECOND: "1000000", RATE_LIMIT_BURST: "1000000", MAX_CONCURRENT_EXECS: "1000", ...vars },
  });
  // The SDK as a Node caller uses it, on the same node:http fetch as the floors' requests (post).
  return { server, client: new SessionsClient({ server: server.url, fetch: nodeFetch }) };
}

/** A positive whole number from the environment variable `name`, else `fallback`; anything else is refused with its name. */
export function wholeFromEnv(name: string, fallback: number): number {
  const v = process.env[name];
  const n = v === undefined || v === "" ? fallback : Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, not ${JSON.stringify(v)}`);
  return n;
}

export async function timed(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

export function median(xs: number[]): number {
  return percentile(xs, 50);
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** Runs each labelled action once per round, in turn, so load and thermal drift hit all alike. */
export async function interleaved(rounds: number, actions: Record<string, () => Promise<unknown>>): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = Object.fromEntries(Object.keys(actions).map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) for (const [k, f] of Object.entries(actions)) out[k]!.push(await timed(f));
  return out;
}

/** The one summary line per benchmark row. */
export function summary(name: string, ratio: number, target: string, extra = ""): void {
  console.log(`bench ${name} ratio=${ratio.toFixed(2)} target=${target}${extra ? ` ${extra}` : ""}`);
}

/**
 * wrangler dev's proxy answers a POST with 503 "Your worker restarted mid-request" when it picks a
 * pooled connection that workerd closed after 5 s idle (workers-sdk#14641); the Worker never saw
 * it. Retried here, never in the SDK: deployed hosts do not do this.
 */
export async function retryProxy503<T>(f: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (e) {
      if (attempt >= 3 || !(e instanceof ConnectError) || e.code !== Code.Unavailable || e.rawMessage !== "HTTP 503") throw e;
    }
  }
}

/** An echo turn besides its inputs: EXECUTION_START, MODEL_CALL, OUTPUT, END. */
const RECORDS_PER_TURN_BESIDES_INPUTS = 4;

/**
 * Extends `uid` with turns of up to 1000 inputs each until it holds at least `records` records;
 * returns its head. `text(i)` is the i-th input's text.
 */
export async function buildSession(client: SessionsClient, uid: string, records: number, text: (i: number) => string = (i) => `in ${i}`): Promise<bigint> {
  let head = (await client.get(uid)).lastSeq;
  let i = Number(head);
  while (head < BigInt(records)) {
    const missing = Number(BigInt(records) - head) - RECORDS_PER_TURN_BESIDES_INPUTS;
    const n = Math.max(1, Math.min(1000, missing));
    const inputs = Array.from({ length: n }, () => text(i++));
    // expectedLastSeq makes a retried turn safe: one that did run is refused, not repeated.
    head = (await retryProxy503(() => client.exec({ session: uid, inputs, expectedLastSeq: head }))).cursor;
  }
  return head;
}

/**
 * A POST, its answer read whole. It goes the way the SDK's own streams go (nodeFetch's stream
 * call: node:http and a chunk queue, no `Response`), so a floor's or a peer's client costs no more
 * than the SDK's client does in the row it is compared with.
 */
export async function postBytes(
  url: string,
  o: { body?: Uint8Array; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<{ status: number; bytes: Uint8Array }> {
  const call = (nodeFetch as unknown as Record<symbol, StreamCall>)[STREAM_CALL]!;
  const a = await call(url, { headers: o.headers ?? {}, body: o.body ?? EMPTY, signal: o.signal });
  return { status: a.status, bytes: a.body ? await bytesOf(a.body) : EMPTY };
}

/** A POST with no body to a bench route (the floors' requests), its answer's bytes. */
export async function post(url: string): Promise<Uint8Array> {
  for (let attempt = 1; ; attempt++) {
    const { status, bytes } = await postBytes(url);
    if (status >= 200 && status < 300) return bytes;
    const text = new TextDecoder().decode(bytes);
    // The same proxy quirk as retryProxy503, for the bench routes.
    if (attempt < 3 && status === 503 && text.includes("restarted mid-request")) continue;
    throw new Error(`${url}: ${status} ${text}`);
  }
}

const EMPTY = new Uint8Array(0);

/** The headers of a binary Connect streaming call (Exec, Replay), sent raw to a route or a floor. */
export const STREAM_HEADERS = { "content-type": "application/connect+proto", "connect-protocol-version": "1" };

/**
 * The name of a five-row floor's object for a row whose session is `uid`: new when the session is,
 * so both write to storage of the same age (docs/platform.md P22).
 */
export function floorObject(uid: string): string {
  return `floor-${uid}`;
}

export function fmt(n: number, digits = 1): string {
  return n.toFixed(digits);
}
