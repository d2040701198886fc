/**
 * Fork cost (docs/behaviour.md §4.7) against prefix length and child count, over HTTP against the
 * `wrangler dev` that bench/run.ts started. Prints wall times per Fork call and per child; it
 * asserts nothing.
 *
 * One echo parent is built once, long enough for the largest prefix, and every fork names its
 * prefix with at_seq: the copy reads the parent's records 1..at_seq only, so forking a long parent
 * at seq N costs what forking an N-record parent at its head does. The parent is built with Execs
 * of many inputs each (one INPUT record per input, one transaction per turn), so 10,000 records
 * take about ten requests. Children are deleted after each measurement, untimed, so storage stays
 * the size of one fan-out.
 *
 * Sizes: BENCH_FORK_PREFIXES (default 10,1000,10000), BENCH_FORK_CHILDREN (default 1,16,128),
 * BENCH_FORK_ROUNDS (default 3; fan-outs copying over 200,000 records run once).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { SessionsClient } from "../sdk/client.js";

const PREFIXES = sizes("BENCH_FORK_PREFIXES", [10, 1000, 10_000]);
const CHILDREN = sizes("BENCH_FORK_CHILDREN", [1, 16, 128]);
const ROUNDS = Number(process.env.BENCH_FORK_ROUNDS ?? 3);
/** Records a fan-out may copy before it is measured once instead of ROUNDS times. */
const ONCE_ABOVE = 200_000;
/** Inputs per building Exec: each a few bytes, so a request stays far under the 4 MiB limit. */
const INPUTS_PER_EXEC = 1000;
/** An echo turn is EXECUTION_START, the inputs, MODEL_CALL, OUTPUT, END. */
const RECORDS_PER_TURN_BESIDES_INPUTS = 4;

function sizes(env: string, fallback: number[]): number[] {
  const v = process.env[env];
  if (!v) return fallback;
  const xs = v.split(",").map((s) => Number(s.trim()));
  if (xs.some((x) => !Number.isInteger(x) || x < 1)) throw new Error(`${env} must be positive integers separated by commas, got ${JSON.stringify(v)}`);
  return xs;
}

/**
 * wrangler dev's proxy answers a POST with 503 "Your worker restarted mid-request" when it picks a
 * pooled connection that workerd closed after 5 s idle (workers-sdk#14641), which the first request
 * after a long fan-out regularly does; the worker never saw it. Retried here, never in the SDK:
 * deployed hosts do not do this, and the SDK does not retry non-idempotent calls.
 */
async function retryProxy503<T>(f: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (e) {
      if (attempt >= 3 || !(e instanceof ConnectError) || e.code !== Code.Unavailable || e.rawMessage !== "HTTP 503") throw e;
    }
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Extends `uid` with echo turns until it holds at least `records` records; returns its head. */
async function buildParent(client: SessionsClient, uid: string, records: number): Promise<bigint> {
  let head = 0n;
  let i = 0;
  while (head < BigInt(records)) {
    const missing = Number(BigInt(records) - head) - RECORDS_PER_TURN_BESIDES_INPUTS;
    const n = Math.max(1, Math.min(INPUTS_PER_EXEC, missing));
    const inputs = Array.from({ length: n }, () => `in ${i++}`);
    // expectedLastSeq makes a retried turn safe: one that did run is refused, not repeated.
    head = (await retryProxy503(() => client.exec({ session: uid, inputs, expectedLastSeq: head }))).cursor;
  }
  return head;
}

interface Row {
  prefix: number;
  children: number;
  rounds: number;
  perFork: number;
}

export async function runForkBench(url: string): Promise<void> {
  const client = new SessionsClient({ server: url });
  const parent = (await client.create({ name: "bench-fork" })).metadata!.uid;
  const target = Math.max(...PREFIXES);
  const built = performance.now();
  const head = await buildParent(client, parent, target);
  const buildMs = performance.now() - built;

  const fork = async (at: number, count: number): Promise<number> => {
    const t = performance.now();
    const kids = await retryProxy503(() => client.fork(parent, { at: BigInt(at), count }));
    const ms = performance.now() - t;
    if (kids.length !== count) throw new Error(`fork returned ${kids.length} children, asked for ${count}`);
    // Untimed, and one at a time: deletes are not what is measured here.
    for (const k of kids) await retryProxy503(() => client.delete(k.metadata!.uid));
    return ms;
  };
  await fork(Math.min(10, target), 1); // warm-up: module load, the fork path's first statements

  const rows: Row[] = [];
  for (const prefix of PREFIXES) {
    for (const children of CHILDREN) {
      const rounds = prefix * children > ONCE_ABOVE ? 1 : Math.max(1, ROUNDS);
      const times: number[] = [];
      for (let r = 0; r < rounds; r++) times.push(await fork(prefix, children));
      rows.push({ prefix, children, rounds, perFork: median(times) });
    }
  }

  console.log("");
  console.log(`fork cost (one echo parent of ${head} records, built in ${(buildMs / 1000).toFixed(1)} s; fork at seq = prefix)`);
  console.log(`  ${"prefix".padStart(7)}  ${"children".padStart(8)}  ${"ms/fork".padStart(9)}  ${"ms/child".padStart(9)}  ${"µs/record".padStart(9)}  runs`);
  for (const r of rows) {
    const perChild = r.perFork / r.children;
    // Every child gets the prefix plus its FORK marker.
    const perRecord = (r.perFork * 1000) / (r.children * (r.prefix + 1));
    console.log(
      `  ${String(r.prefix).padStart(7)}  ${String(r.children).padStart(8)}  ${r.perFork.toFixed(1).padStart(9)}  ${perChild.toFixed(2).padStart(9)}  ${perRecord.toFixed(2).padStart(9)}  ${r.rounds === 1 ? "1" : `median of ${r.rounds}`}`,
    );
  }
}
