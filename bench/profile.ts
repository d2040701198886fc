/**
 * `npm run bench:profile`: where a turn's time and garbage go inside workerd. It starts a
 * `wrangler dev` with its devtools inspector, warms the host up, then runs the same turns twice,
 * once under V8's sampling CPU profiler and once under its sampling heap profiler (counting what
 * minor and major GCs collected too, so it is what a turn allocates, not what it keeps). It prints
 * the garbage collector's share of the isolate's busy samples, the functions most often on top of
 * the stack, what a turn allocates, and the functions that allocate the most. It asserts nothing,
 * and no test runs it.
 *
 * The profilers slow what they watch (the CPU profile's per-turn times are above what `npm run
 * bench` measures); compare runs of this script with each other, not with the other benches.
 * Under workerd the CPU sampler is late and its samples gather on calls into native code
 * (docs/platform.md P20): a function's share is a lead to time it in a loop, not its cost. The
 * heap profile has no such bias.
 * The Worker and every Durable Object share one isolate under `wrangler dev`, so both show.
 *
 * PROFILE_HARNESS: chat (the `chat` harness with the host's `echo` model; the default) or echo.
 * PROFILE_TURNS: turns per profile (1000). PROFILE_PARALLEL: sessions running turns at once (1).
 * PROFILE_TOP: rows per list (25). PROFILE_OUT: a folder to write the raw profiles to
 * (turn.cpuprofile, turn.heapprofile), which Chrome's DevTools open.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import WebSocket from "ws";
import { startDevServer } from "../scripts/dev-server.js";
import { SessionsClient } from "../sdk/client.js";
import { nodeFetch } from "../sdk/node/index.js";
import { fmt, wholeFromEnv } from "./lib.js";

const HARNESS = process.env.PROFILE_HARNESS ?? "chat";
if (HARNESS !== "chat" && HARNESS !== "echo") throw new Error(`PROFILE_HARNESS must be chat or echo, not ${JSON.stringify(HARNESS)}`);
const TURNS = wholeFromEnv("PROFILE_TURNS", 1000);
const PARALLEL = wholeFromEnv("PROFILE_PARALLEL", 1);
const TOP = wholeFromEnv("PROFILE_TOP", 25);
const OUT = process.env.PROFILE_OUT ? resolve(process.env.PROFILE_OUT) : undefined;
/** Turns a session runs before the next one opens: sessions stay short, as most are. */
const TURNS_PER_SESSION = 200;
const WARM_TURNS = 400;

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}
interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

/** "name file:line" (the line 1-based), as DevTools names a frame. */
function frameName(f: CallFrame): string {
  const file = f.url ? f.url.split("/").pop() : "";
  return file ? `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}` : f.functionName || "(anonymous)";
}

/** The inspector's one target (the Worker's isolate), as a request/answer channel. */
async function inspector(port: number): Promise<{ send: <T>(method: string, params?: object) => Promise<T>; close: () => void }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl?: string }[];
  const url = targets.find((t) => t.webSocketDebuggerUrl)?.webSocketDebuggerUrl;
  if (!url) throw new Error("wrangler's inspector lists no target to profile");
  const ws = new WebSocket(url);
  await new Promise<void>((ok, fail) => {
    ws.once("open", () => ok());
    ws.once("error", fail);
  });
  let next = 0;
  const waiting = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>();
  ws.on("message", (data) => {
    const m = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    const w = m.id === undefined ? undefined : waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id!);
    if (m.error) w.fail(new Error(`inspector: ${m.error.message}`));
    else w.ok(m.result);
  });
  return {
    send: <T>(method: string, params: object = {}) =>
      new Promise<T>((ok, fail) => {
        const id = ++next;
        waiting.set(id, { ok: ok as (v: unknown) => void, fail });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

function top(m: Map<string, number>, per: (v: number) => string): string {
  return [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([k, v]) => `  ${per(v).padStart(9)}  ${k}`)
    .join("\n");
}

/**
 * Samples per frame name, where each sample is the frame on top of the stack. Counted, not weighed
 * by the time since the sample before: under workerd the sampler often waits (the gap's median was
 * 0.2 ms, its 90th percentile 3.8 ms, in a run of 1,000 turns) and a gap's time would land on the
 * first JavaScript that runs after it, such as a request's first function, whatever ran meanwhile.
 */
function cpuSummary(p: CpuProfile): { self: Map<string, number>; busy: number; gc: number; program: number; gapP50: number; gapP90: number } {
  const names = new Map(p.nodes.map((n) => [n.id, frameName(n.callFrame)]));
  const self = new Map<string, number>();
  for (const id of p.samples) {
    const k = names.get(id) ?? "(unknown)";
    self.set(k, (self.get(k) ?? 0) + 1);
  }
  const gaps = [...p.timeDeltas].sort((a, b) => a - b);
  const at = (q: number) => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))] ?? 0;
  const busy = p.samples.length - (self.get("(idle)") ?? 0);
  return { self, busy, gc: self.get("(garbage collector)") ?? 0, program: self.get("(program)") ?? 0, gapP50: at(0.5), gapP90: at(0.9) };
}

/** Bytes allocated per frame name (itself), and in all. */
function heapSummary(head: HeapNode): { self: Map<string, number>; total: number } {
  const self = new Map<string, number>();
  let total = 0;
  const stack = [head];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.selfSize > 0) {
      const k = frameName(n.callFrame);
      self.set(k, (self.get(k) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    stack.push(...n.children);
  }
  return { self, total };
}

async function main(): Promise<void> {
  // The chat harness is served only with a model provider configured; the `echo` model answers in
  // the host and never calls it, so the address needs nothing listening. Limits high enough that
  // no turn is refused while warming up or running sessions at once.
  const server = await startDevServer({
    inspector: true,
    vars: {
      MODEL_BASE_URL: "http://127.0.0.1:9/v1",
      RATE_LIMIT_PER_SECOND: "1000000",
      RATE_LIMIT_BURST: "1000000",
      MAX_CONCURRENT_EXECS: "1000",
    },
  });
  try {
    const client = new SessionsClient({ server: server.url, fetch: nodeFetch });
    const open = async () => (await client.create({ name: "profile", harness: HARNESS, ...(HARNESS === "chat" ? { model: "echo" } : {}) })).metadata!.uid;
    /** `n` turns over PARALLEL sessions at once, each opening a new session every TURNS_PER_SESSION turns. */
    const run = async (n: number): Promise<number> => {
      const t = performance.now();
      await Promise.all(
        Array.from({ length: PARALLEL }, async (_, lane) => {
          let uid = "";
          for (let i = 0; i < Math.ceil(n / PARALLEL); i++) {
            if (i % TURNS_PER_SESSION === 0) uid = await open();
            const r = await client.exec({ session: uid, inputs: [`turn ${lane}.${i}`] });
            if (r.outputs[0] !== `echo:turn ${lane}.${i}`) throw new Error(`a turn answered ${JSON.stringify(r.outputs[0])}`);
          }
        }),
      );
      return performance.now() - t;
    };
    const turns = Math.ceil(TURNS / PARALLEL) * PARALLEL;
    console.log(`bench profile: ${HARNESS} turns, ${turns} per profile, ${PARALLEL} session(s) at once; warming up with ${WARM_TURNS} …`);
    await run(WARM_TURNS);

    const insp = await inspector(server.inspectorPort);
    try {
      await insp.send("Profiler.enable");
      await insp.send("Profiler.setSamplingInterval", { interval: 100 });
      await insp.send("Profiler.start");
      const cpuWall = await run(turns);
      const { profile: cpu } = await insp.send<{ profile: CpuProfile }>("Profiler.stop");

      await insp.send("HeapProfiler.enable");
      await insp.send("HeapProfiler.startSampling", { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      await run(turns);
      const { profile: heap } = await insp.send<{ profile: { head: HeapNode } }>("HeapProfiler.stopSampling");

      if (OUT) {
        mkdirSync(OUT, { recursive: true });
        writeFileSync(join(OUT, "turn.cpuprofile"), JSON.stringify(cpu));
        writeFileSync(join(OUT, "turn.heapprofile"), JSON.stringify(heap));
      }

      const c = cpuSummary(cpu);
      const share = (n: number) => `${fmt((100 * n) / c.busy)}%`;
      console.log(
        `\nCPU profile: ${fmt(cpuWall / turns, 2)} ms of wall time a turn while profiled; ${c.busy} samples with the isolate busy (sampling gaps: median ${fmt(c.gapP50 / 1000, 2)} ms, 90th percentile ${fmt(c.gapP90 / 1000, 2)} ms)`,
      );
      console.log(`  garbage collection ${share(c.gc)} of the busy samples, native code outside JavaScript ${share(c.program)}`);
      for (const k of ["(idle)", "(garbage collector)", "(program)", "(root)"]) c.self.delete(k);
      console.log(
        `\nfunctions on top of the stack, as a share of the busy samples (biased toward native calls such as SQL's exec: time one in a loop before acting on it):\n${top(c.self, share)}`,
      );

      const h = heapSummary(heap.head);
      const kb = (b: number) => `${fmt(b / 1024 / turns, 2)} KB`;
      console.log(`\nallocated per turn (sampled every 1 KiB, collected objects included): ${kb(h.total)}`);
      console.log(`\nallocated by each function itself, per turn:\n${top(h.self, kb)}`);
      if (OUT) console.log(`\nraw profiles: ${join(OUT, "turn.cpuprofile")}, ${join(OUT, "turn.heapprofile")}`);
      console.log(`\nbench profile gc_share=${fmt(c.gc / c.busy, 3)} allocated_kb_per_turn=${fmt(h.total / 1024 / turns, 1)}`);
    } finally {
      insp.close();
    }
  } finally {
    await server.dispose();
  }
}

await main();
