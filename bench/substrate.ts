/**
 * `npm run bench:substrate`: the substrate bridge against the stand-in ateapi (test/fixtures/ateapi),
 * in one process: wall time of Create (an absent actor: create, resume, attach), Snapshot(EXTERNAL),
 * Restore, and ForkMany by child count, with the ateapi calls each makes. The stand-in's actors are
 * processes whose "memory" comes from a test-only hook, so the times are the bridge's and this
 * machine's process start-up, not a real restore (seconds on a cluster). Prints medians; asserts
 * nothing. Sizes: BENCH_SUBSTRATE_CHILDREN (default 1,4,16), BENCH_SUBSTRATE_ROUNDS (default 3).
 */
import { resolve } from "node:path";
import { startFakeTunnel } from "../test/node/pod/fake-tunnel.js";
import { startStandin } from "../test/fixtures/ateapi/standin.js";
import { createHttpRuntime } from "../runtimes/http/index.js";
import { loadHostedHarness, startSubstrateServer } from "../runtimes/substrate/index.js";

const CHILDREN = (process.env.BENCH_SUBSTRATE_CHILDREN ?? "1,4,16").split(",").map(Number);
const ROUNDS = Number(process.env.BENCH_SUBSTRATE_ROUNDS ?? 3);
const COUNTER = resolve("examples/harnesses/counter.ts");

let n = 0;
const uid = () => `sess-${(++n).toString(16).padStart(24, "0")}`;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const v = await f();
  return [v, performance.now() - t];
}

async function main(): Promise<void> {
  const tunnel = await startFakeTunnel({ oneTime: true });
  const standin = await startStandin({ templates: { counter: COUNTER } });
  const bridge = await startSubstrateServer({
    ateapiUrl: standin.url,
    atespace: "agentsessions",
    template: "counter",
    harness: await loadHostedHarness(`counter=${COUNTER}`),
    routerUrl: standin.routerUrl,
    log: () => undefined,
  });
  const runtime = createHttpRuntime({ baseUrl: bridge.url, timeoutMs: 120_000 });
  const spec = (u: string) => ({ sessionUid: u, harness: "counter", dialback: tunnel.dialback("counter", u) });
  const calls = () => standin.calls.length;
  try {
    const created: number[] = [];
    const snapped: number[] = [];
    const restored: number[] = [];
    let perCreate = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const u = uid();
      const before = calls();
      const [inc, c] = await timed(() => runtime.create(spec(u)));
      perCreate = calls() - before;
      await tunnel.exec(u);
      const [ref, s] = await timed(() => runtime.snapshot(inc, "EXTERNAL"));
      const [, r] = await timed(() => runtime.restore(ref, spec(u)));
      created.push(c);
      snapped.push(s);
      restored.push(r);
      await runtime.stop(inc);
    }
    console.log(
      `create ${median(created).toFixed(0)} ms (${perCreate} ateapi calls + 1 attach), snapshot ${median(snapped).toFixed(0)} ms, restore ${median(restored).toFixed(0)} ms`,
    );

    for (const count of CHILDREN) {
      const times: number[] = [];
      let perFork = 0;
      for (let i = 0; i < ROUNDS; i++) {
        const parent = uid();
        const inc = await runtime.create(spec(parent));
        await tunnel.exec(parent);
        const ref = await runtime.snapshot(inc, "EXTERNAL");
        const children = Array.from({ length: count }, () => {
          const u = uid();
          return { sessionUid: u, dialback: tunnel.dialback("counter", u) };
        });
        const before = calls();
        const [incs, t] = await timed(() => runtime.forkMany(ref, children, { sessionUid: parent, harness: "counter" }));
        perFork = calls() - before;
        times.push(t);
        for (const c of incs) await runtime.stop(c);
        await runtime.stop(inc);
      }
      const m = median(times);
      console.log(
        `forkMany ${count}: ${m.toFixed(0)} ms, ${(m / count).toFixed(0)} ms per child, ${perFork} ateapi calls (${(perFork / count).toFixed(1)} per child) + ${count} attaches`,
      );
    }
  } finally {
    await bridge.close();
    await standin.close();
    await tunnel.close();
  }
}

await main();
