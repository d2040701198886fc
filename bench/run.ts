/**
 * `npm run bench`: journal append cost against a plain SQLite insert of the same bytes, measured
 * side by side in one Durable Object of a real `wrangler dev`; and an echo turn over HTTP against a
 * bare request that appends five rows in one Durable Object call; then fork cost against prefix
 * length and child count on the same server (bench/fork.ts). Prints medians and ratios; it asserts
 * nothing (timings never gate tests).
 */
import { startDevServer } from "../scripts/dev-server.js";
import { SessionsClient } from "../sdk/client.js";
import { runForkBench } from "./fork.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const APPENDS = Number(process.env.BENCH_APPENDS ?? 5000);
const TURNS = Number(process.env.BENCH_TURNS ?? 40);

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function get(url: string): Promise<void> {
  const r = await fetch(url, { method: "POST" });
  if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  await r.arrayBuffer();
}

async function main(): Promise<void> {
  console.log("starting wrangler dev with BENCH=1 …");
  // The fork bench builds its 10,000-record parent from Execs of 1000 inputs (bench/fork.ts), over
  // the default MAX_INPUTS_PER_EXEC of 64.
  const server = await startDevServer({ vars: { BENCH: "1", MAX_INPUTS_PER_EXEC: "1000" } });
  try {
    const u = server.url;
    // Warm up both paths (module load, statement cache).
    await get(`${u}/_bench/append?n=500&size=300`);
    await get(`${u}/_bench/plain?n=500&size=300`);

    const append: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      append.push(await timed(() => get(`${u}/_bench/append?n=${APPENDS}&size=300`)));
      plain.push(await timed(() => get(`${u}/_bench/plain?n=${APPENDS}&size=300`)));
    }
    const perAppend = (median(append) * 1000) / APPENDS;
    const perPlain = (median(plain) * 1000) / APPENDS;

    const client = new SessionsClient({ server: u });
    const s = await client.create({ name: "bench" });
    const uid = s.metadata!.uid;
    await client.exec({ session: uid, inputs: ["warm"] });
    await get(`${u}/_bench/five`);
    const turns: number[] = [];
    const five: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      turns.push(await timed(() => client.exec({ session: uid, inputs: [`turn ${i}`] })));
      five.push(await timed(() => get(`${u}/_bench/five`)));
    }

    console.log("");
    console.log(`journal append vs plain insert (${APPENDS} events of ~300 B per call, median of ${ROUNDS} rounds)`);
    console.log(`  hash-chained append   ${perAppend.toFixed(1).padStart(8)} µs/event`);
    console.log(`  plain SQLite insert   ${perPlain.toFixed(1).padStart(8)} µs/event`);
    console.log(`  ratio                 ${(perAppend / perPlain).toFixed(2).padStart(8)} x`);
    console.log("");
    console.log(`echo turn over HTTP vs bare five-row request (median of ${TURNS})`);
    console.log(`  echo turn (Exec)      ${median(turns).toFixed(2).padStart(8)} ms`);
    console.log(`  bare 5-row request    ${median(five).toFixed(2).padStart(8)} ms`);
    console.log(`  ratio                 ${(median(turns) / median(five)).toFixed(2).padStart(8)} x`);

    await runForkBench(u);
  } finally {
    await server.dispose();
  }
}

await main();
