/**
 * `npm run bench:peers`: ours against the systems a user would pick instead, measured side by side
 * in one run on this machine (docs/performance.md, "Peers", says what each number means).
 *
 * Every system does the same work per turn: append the user's message, call a stub model that
 * answers at once, append the answer, persist durably. Rounds alternate the systems (the order
 * rotates each round) and the table reports medians, with each peer's ratio to ours (peer ÷ ours),
 * plus the transport floors. It is a benchmark: it asserts nothing, and no test runs it.
 *
 * Levels are env vars: PEERS_FRESH_ROUNDS (8), PEERS_LEVELS ("1000,5000"; "1000" skips the 5,000
 * level), PEERS_LEVEL_ROUNDS (4) of PEERS_LEVEL_BURST (8) turns per system at each level, PEERS_PARALLEL (16 sessions),
 * PEERS_PARALLEL_TURNS (30 per session), PEERS_PARALLEL_ROUNDS (3), PEERS_FSYNC_TURNS (50),
 * PEERS_FLOOR_SAMPLES (200), PEERS_OURS_LOG_LEVEL (warn: our host's LOG_LEVEL; info adds the request line
 * each turn writes, which the other systems do not write).
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { countFsyncs, straceAvailable } from "./fsyncs.js";
import { postBytes, wholeFromEnv } from "../lib.js";
import { ensurePeersInstalled } from "./install.js";
import { Cleanup, cpuTimes, startFloorServer, startPeersWorker } from "./processes.js";
import { formatTable, formatValue, median, type Metric, percentile, roundOrder, type SystemName, summaryLine } from "./stats.js";
import { aiChat, bareDo, type PeerSession, startLangGraph, startOurs, type System } from "./systems.js";

const HERE = dirname(fileURLToPath(import.meta.url));

const cfg = {
  freshRounds: wholeFromEnv("PEERS_FRESH_ROUNDS", 8),
  freshTurns: 20,
  levels: (process.env.PEERS_LEVELS ?? "1000,5000")
    .split(",")
    .map((s) => Number(s.trim()))
    .filter((n) => n > 0)
    .sort((a, b) => a - b),
  levelRounds: wholeFromEnv("PEERS_LEVEL_ROUNDS", 4),
  levelBurst: wholeFromEnv("PEERS_LEVEL_BURST", 8),
  parallel: wholeFromEnv("PEERS_PARALLEL", 16),
  parallelTurns: wholeFromEnv("PEERS_PARALLEL_TURNS", 30),
  parallelRounds: wholeFromEnv("PEERS_PARALLEL_ROUNDS", 3),
  fsyncTurns: wholeFromEnv("PEERS_FSYNC_TURNS", 50),
  warmSessions: wholeFromEnv("PEERS_WARM_SESSIONS", 10),
  warmTurns: wholeFromEnv("PEERS_WARM_TURNS", 60),
  floorSamples: wholeFromEnv("PEERS_FLOOR_SAMPLES", 200),
  oursLogLevel: process.env.PEERS_OURS_LOG_LEVEL ?? "warn",
};
/** Storage is the growth between these two points of the long session (fixed overhead left out). */
const STORAGE_FROM = 20;

const log = (line: string) => console.log(`bench peers: ${line}`);
/** The 1-minute load average at each phase's start: a busy machine makes a run disagree with the next. */
const loads: number[] = [];
const started = performance.now();
const elapsed = () => {
  loads.push(loadavg()[0]!);
  return `${((performance.now() - started) / 1000).toFixed(0)} s, load ${loadavg()[0]!.toFixed(1)}`;
};

/** `rounds` rounds of a new session per system, `turns` timed turns each; sessions are named `<name>-<round>`. */
async function freshSessions(systems: System[], name: string, rounds: number, turns: number): Promise<Map<SystemName, number[]>> {
  const times = new Map<SystemName, number[]>(systems.map((s) => [s.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const sys of roundOrder(systems, r)) {
      const s = await sys.open(`${name}-${r}`, "fresh");
      for (let i = 1; i <= turns; i++) times.get(sys.name)!.push(await s.turn(`${name} turn ${i}`));
      await s.close();
    }
  }
  return times;
}

/** Runs each long session up to `target` turns, 50 at a time per system, alternating systems. */
async function buildTo(systems: System[], long: Map<SystemName, PeerSession>, turns: Map<SystemName, number>, target: number): Promise<void> {
  for (let r = 0; [...turns.values()].some((n) => n < target); r++) {
    for (const sys of roundOrder(systems, r)) {
      const s = long.get(sys.name)!;
      for (let i = 0; i < 50 && turns.get(sys.name)! < target; i++) {
        await s.turn(`long turn ${turns.get(sys.name)! + 1}`);
        turns.set(sys.name, turns.get(sys.name)! + 1);
      }
    }
  }
}

/** Logical SQLite bytes per system, by storage group (a Durable Object class, or a database file). */
async function storageBytes(systems: System[], sizes: (files: string[]) => Promise<number[]>): Promise<Map<SystemName, Map<string, number>>> {
  const out = new Map<SystemName, Map<string, number>>();
  for (const sys of systems) {
    const files = sys.storageFiles();
    const bytes = await sizes(files);
    const groups = new Map<string, number>();
    files.forEach((f, i) => {
      const g = f.endsWith(".sqlite") && /^[0-9a-f]{64}\.sqlite$/.test(basename(f)) ? basename(dirname(f)) : basename(f);
      groups.set(g, (groups.get(g) ?? 0) + bytes[i]!);
    });
    out.set(sys.name, groups);
  }
  return out;
}

function total(groups: Map<string, number> | undefined): number {
  return [...(groups ?? new Map<string, number>()).values()].reduce((a, b) => a + b, 0);
}

/** "name=B/turn" for each storage group that grew, largest first. */
function growthByGroup(before: Map<string, number> | undefined, after: Map<string, number>, turns: number): string {
  return [...after]
    .map(([g, b]) => [g, (b - (before?.get(g) ?? 0)) / turns] as const)
    .filter(([, d]) => d !== 0)
    .sort((a, b) => b[1] - a[1])
    .map(([g, d]) => `${g}=${formatValue(d)}`)
    .join(" ");
}

/**
 * Turns on each long session: `levelRounds` rounds in which each system runs `levelBurst` turns one
 * after another, as the fresh row's turns run. The first turn of a burst follows the other systems'
 * turns (over a second each at 5,000 turns for LangGraph and AIChatAgent), and on these machines
 * code that runs after a pause runs slower (docs/platform.md P23), however long the history: so the
 * bursts' later turns measure the turn at that history ("back to back"), and the first ones are
 * reported apart ("after a pause").
 */
async function atLevel(
  systems: System[],
  long: Map<SystemName, PeerSession>,
  turns: Map<SystemName, number>,
): Promise<{ backToBack: Map<SystemName, number[]>; afterPause: Map<SystemName, number[]> }> {
  const backToBack = new Map<SystemName, number[]>(systems.map((s) => [s.name, []]));
  const afterPause = new Map<SystemName, number[]>(systems.map((s) => [s.name, []]));
  for (let r = 0; r < cfg.levelRounds; r++) {
    for (const sys of roundOrder(systems, r)) {
      for (let i = 0; i < cfg.levelBurst; i++) {
        const ms = await long.get(sys.name)!.turn(`level turn ${r}.${i}`);
        (i === 0 && cfg.levelBurst > 1 ? afterPause : backToBack).get(sys.name)!.push(ms);
        turns.set(sys.name, turns.get(sys.name)! + 1);
      }
    }
  }
  return { backToBack, afterPause };
}

interface ParallelResult {
  throughput: number[];
  latencies: number[];
  /** Per round: CPU per turn of the bench process (the clients), and of the serving processes. */
  clientMs: number[];
  servingMs: number[];
  /** Per round: each serving process's CPU per turn, busiest first. */
  processes: { comm: string; ms: number }[][];
}

/** CPU used between two `cpuTimes` snapshots, per process alive in both, divided by `turns`. */
function cpuPerTurn(
  before: Map<number, { comm: string; cpuMs: number }>,
  after: Map<number, { comm: string; cpuMs: number }>,
  turns: number,
): { comm: string; ms: number }[] {
  const out: { comm: string; ms: number }[] = [];
  for (const [pid, a] of after) {
    const b = before.get(pid);
    if (b) out.push({ comm: a.comm, ms: (a.cpuMs - b.cpuMs) / turns });
  }
  return out.sort((x, y) => y.ms - x.ms);
}

async function parallel(systems: System[]): Promise<Map<SystemName, ParallelResult>> {
  const out = new Map<SystemName, ParallelResult>(systems.map((s) => [s.name, { throughput: [], latencies: [], clientMs: [], servingMs: [], processes: [] }]));
  for (let r = 0; r < cfg.parallelRounds; r++) {
    for (const sys of roundOrder(systems, r)) {
      // Opened one by one: the load measured is turns, not session creation.
      const sessions: PeerSession[] = [];
      for (let i = 0; i < cfg.parallel; i++) sessions.push(await sys.open(`par-${r}-${i}`, "fresh"));
      // Each session's first turn (the object's start) is not part of the load.
      await Promise.all(sessions.map((s) => s.turn("warm")));
      const res = out.get(sys.name)!;
      const pids = sys.servingPids();
      const cpuBefore = cpuTimes(pids);
      const clientBefore = process.cpuUsage();
      const t = performance.now();
      await Promise.all(
        sessions.map(async (s) => {
          for (let i = 0; i < cfg.parallelTurns; i++) res.latencies.push(await s.turn(`parallel turn ${i}`));
        }),
      );
      const n = cfg.parallel * cfg.parallelTurns;
      res.throughput.push(n / ((performance.now() - t) / 1000));
      const client = process.cpuUsage(clientBefore);
      const procs = cpuPerTurn(cpuBefore, cpuTimes(pids), n);
      res.clientMs.push((client.user + client.system) / 1000 / n);
      res.servingMs.push(procs.reduce((a, p) => a + p.ms, 0));
      res.processes.push(procs.filter((p) => p.ms >= 0.05));
      await Promise.all(sessions.map((s) => s.close()));
    }
  }
  return out;
}

async function fsyncs(systems: System[], dir: string, cleanup: Cleanup): Promise<Map<SystemName, number>> {
  const out = new Map<SystemName, number>();
  for (const sys of systems) {
    const s = await sys.open("fsync", "fresh");
    await s.turn("warm 1");
    await s.turn("warm 2");
    const calls = await countFsyncs(sys.fsyncPids(), dir, cleanup, async () => {
      for (let i = 0; i < cfg.fsyncTurns; i++) await s.turn(`fsync turn ${i}`);
    });
    out.set(sys.name, calls / cfg.fsyncTurns);
    await s.close();
  }
  return out;
}

const PING = new TextEncoder().encode("ping");

async function floors(httpUrl: string, workerUrl: string, dir: string): Promise<{ http: number; worker: number; ws: number; fsync: number }> {
  const ws = new WebSocket(`${workerUrl.replace(/^http/, "ws")}/ws-echo/floor`);
  await new Promise<void>((ok, fail) => {
    ws.once("open", () => ok());
    ws.once("error", fail);
  });
  const post = async (url: string) => {
    const t = performance.now();
    const r = await postBytes(url, { body: PING, headers: { "content-type": "text/plain;charset=UTF-8" } });
    if (r.status !== 200) throw new Error(`floor ${url}: HTTP ${r.status}`);
    return performance.now() - t;
  };
  const wsOnce = async () => {
    const t = performance.now();
    const got = new Promise<void>((ok) => ws.once("message", () => ok()));
    ws.send("ping");
    await got;
    return performance.now() - t;
  };
  // The disk every system here commits to: a 4 KiB write and its fsync, in the run's temp folder.
  const fd = openSync(join(dir, "fsync-floor"), "w");
  const page = Buffer.alloc(4096, 1);
  const fsyncOnce = async () => {
    const t = performance.now();
    writeSync(fd, page, 0, page.length, 0);
    fsyncSync(fd);
    return performance.now() - t;
  };
  const samples = { http: [] as number[], worker: [] as number[], ws: [] as number[], fsync: [] as number[] };
  const probes = [
    async () => samples.http.push(await post(httpUrl)),
    async () => samples.worker.push(await post(`${workerUrl}/floor`)),
    async () => samples.ws.push(await wsOnce()),
    async () => samples.fsync.push(await fsyncOnce()),
  ];
  for (let i = 0; i < 10; i++) for (const p of probes) await p(); // warm-up, discarded
  samples.http.length = samples.worker.length = samples.ws.length = samples.fsync.length = 0;
  for (let r = 0; r < cfg.floorSamples; r++) for (const p of roundOrder(probes, r)) await p();
  ws.close();
  closeSync(fd);
  return { http: median(samples.http), worker: median(samples.worker), ws: median(samples.ws), fsync: median(samples.fsync) };
}

/** "system: comm ms + comm ms …" for each system, from the round whose serving total is the median. */
function cpuNotes(p: Map<SystemName, ParallelResult>): string {
  return [...p]
    .map(([name, r]) => {
      const mid = median(r.servingMs);
      const round = r.servingMs.reduce((best, v, i) => (Math.abs(v - mid) < Math.abs(r.servingMs[best]! - mid) ? i : best), 0);
      return `${name}: ${(r.processes[round] ?? []).map((q) => `${q.comm} ${formatValue(q.ms)}`).join(" + ") || "–"}`;
    })
    .join(" · ");
}

function byName<T>(m: Map<SystemName, T>, f: (v: T) => number): Partial<Record<SystemName, number>> {
  return Object.fromEntries([...m].map(([k, v]) => [k, f(v)]));
}

async function main(cleanup: Cleanup): Promise<void> {
  ensurePeersInstalled(HERE, log);
  const root = mkdtempSync(join(tmpdir(), "bench-peers-"));
  cleanup.add(async () => rmSync(root, { recursive: true, force: true }));
  for (const d of ["ours", "peers", "langgraph"]) mkdirSync(join(root, d));
  // wrangler makes an (empty) .wrangler/tmp beside the peers' config; a run that made it removes it.
  const wranglerDir = join(HERE, "worker", ".wrangler");
  if (!existsSync(wranglerDir)) cleanup.add(async () => rmSync(wranglerDir, { recursive: true, force: true }));

  log("starting ours (wrangler dev), the peers' worker (wrangler dev), the LangGraph runner and the floor server …");
  const langgraph = await startLangGraph(join(root, "langgraph"), cleanup);
  const ours = await startOurs(join(root, "ours"), cleanup, cfg.oursLogLevel);
  const worker = await startPeersWorker(join(root, "peers"), cleanup);
  const floorUrl = await startFloorServer(cleanup);
  logFiles.push(ours.logFile, worker.logFile);
  const systems: System[] = [ours, langgraph, aiChat(worker), bareDo(worker)];
  log(`config ${JSON.stringify(cfg)}`);

  // A first warm-up (module load, statement caches, connection pools); discarded.
  for (const sys of systems) {
    const s = await sys.open("warm", "fresh");
    for (let i = 0; i < 3; i++) await s.turn(`warm ${i}`);
    await s.close();
  }

  // Commits are counted first: the later phases leave many objects idle, and workerd closing an
  // idle object syncs its database, so in a later window those syncs would count as the turns' own
  // (an earlier run measured 2.0 to 3.7 per turn for the same code, depending on what had gone before).
  let fsyncsPerTurn: Map<SystemName, number> | undefined;
  if (straceAvailable()) {
    log(`fsyncs (strace, ${cfg.fsyncTurns} turns each) … [${elapsed()}]`);
    fsyncsPerTurn = await fsyncs(systems, root, cleanup);
  } else {
    log("fsyncs skipped: strace is not installed (apt-get install -y strace)");
  }

  // Warm-up proper, after the fsync count (which it would disturb: workerd closing idle warm-up
  // objects syncs their databases). A hosted isolate has served many sessions before this one, and
  // V8 compiles a hot path only after many calls: ours' fresh turns took 4.5 ms over its first 200
  // and about 3 ms after 600. Every system gets the same, interleaved.
  log(`warm-up (${cfg.warmSessions} sessions × ${cfg.warmTurns} turns) … [${elapsed()}]`);
  await freshSessions(systems, "warm", cfg.warmSessions, cfg.warmTurns);

  const metrics: Metric[] = [];
  log(`fresh sessions (${cfg.freshRounds} rounds × ${cfg.freshTurns} turns) … [${elapsed()}]`);
  const f = await freshSessions(systems, "fresh", cfg.freshRounds, cfg.freshTurns);
  metrics.push({ key: "fresh_turn_ms", label: `fresh session, turns 1–${cfg.freshTurns}, median`, unit: "ms", better: "lower", values: byName(f, median) });

  const long = new Map<SystemName, PeerSession>();
  for (const sys of systems) long.set(sys.name, await sys.open("long", "long"));
  const turns = new Map<SystemName, number>(systems.map((s) => [s.name, 0]));
  let storage: Partial<Record<SystemName, number>> | undefined;
  const storageNotes: string[] = [];
  for (const level of cfg.levels) {
    if (storage === undefined) {
      // The first level is built turn by turn, so its storage is what real turns leave behind.
      log(`building long sessions to ${level} turns, turn by turn … [${elapsed()}]`);
      await buildTo(systems, long, turns, Math.min(STORAGE_FROM, level));
      const before = await storageBytes(systems, langgraph.sizes);
      await buildTo(systems, long, turns, level);
      const after = await storageBytes(systems, langgraph.sizes);
      const grown = level - Math.min(STORAGE_FROM, level);
      storage = Object.fromEntries(systems.map((s) => [s.name, grown > 0 ? (total(after.get(s.name)) - total(before.get(s.name))) / grown : Number.NaN]));
      if (grown > 0)
        for (const sys of systems) storageNotes.push(`${sys.name}: ${growthByGroup(before.get(sys.name), after.get(sys.name)!, grown) || "no growth"}`);
    } else {
      log(`extending long sessions to ${level} turns in bulk … [${elapsed()}]`);
      for (const sys of systems) {
        const missing = level - turns.get(sys.name)!;
        if (missing > 0) await long.get(sys.name)!.seed(missing);
        turns.set(sys.name, level);
      }
    }
    log(`per turn at ${level} turns (${cfg.levelRounds} rounds of ${cfg.levelBurst} turns each) … [${elapsed()}]`);
    const t = await atLevel(systems, long, turns);
    metrics.push({
      key: `turn_ms_at_${level}`,
      label: `per turn at ${level.toLocaleString("en-US")} turns, back to back`,
      unit: "ms",
      better: "lower",
      values: byName(t.backToBack, median),
    });
    if (cfg.levelBurst > 1)
      metrics.push({
        key: `turn_ms_at_${level}_after_pause`,
        label: `per turn at ${level.toLocaleString("en-US")} turns, after the other systems' turns`,
        unit: "ms",
        better: "lower",
        values: byName(t.afterPause, median),
      });
  }
  for (const s of long.values()) await s.close();

  log(`${cfg.parallel} sessions in parallel (${cfg.parallelRounds} rounds × ${cfg.parallelTurns} turns each) … [${elapsed()}]`);
  const p = await parallel(systems);
  metrics.push({
    key: `parallel_${cfg.parallel}_turns_per_s`,
    label: `${cfg.parallel} sessions in parallel, throughput`,
    unit: "turns/s",
    better: "higher",
    values: byName(p, (r) => median(r.throughput)),
  });
  metrics.push({
    key: `parallel_${cfg.parallel}_p50_ms`,
    label: `${cfg.parallel} sessions in parallel, p50`,
    unit: "ms",
    better: "lower",
    values: byName(p, (r) => percentile(r.latencies, 50)),
  });
  metrics.push({
    key: `parallel_${cfg.parallel}_serving_cpu_ms`,
    label: `${cfg.parallel} sessions in parallel, CPU per turn of the serving processes`,
    unit: "ms",
    better: "lower",
    values: byName(p, (r) => median(r.servingMs)),
  });
  metrics.push({
    key: `parallel_${cfg.parallel}_client_cpu_ms`,
    label: `${cfg.parallel} sessions in parallel, CPU per turn of the bench's client`,
    unit: "ms",
    better: "lower",
    values: byName(p, (r) => median(r.clientMs)),
  });
  if (storage && cfg.levels[0]! > STORAGE_FROM) {
    metrics.push({
      key: `bytes_per_turn_at_${cfg.levels[0]}`,
      label: `storage per turn at ${cfg.levels[0]!.toLocaleString("en-US")} turns`,
      unit: "B",
      better: "lower",
      values: storage,
    });
  }

  if (fsyncsPerTurn) {
    metrics.push({ key: "fsyncs_per_turn", label: "fsyncs per turn", unit: "calls", better: "lower", values: byName(fsyncsPerTurn, (v) => v) });
  }

  log(`transport floors (${cfg.floorSamples} samples each) … [${elapsed()}]`);
  const fl = await floors(floorUrl, worker.url, root);

  console.log("");
  console.log(formatTable(metrics));
  console.log("");
  console.log(
    `transport floors (median): bare HTTP round trip ${formatValue(fl.http)} ms · Worker-only request ${formatValue(fl.worker)} ms · WebSocket message to a DO ${formatValue(fl.ws)} ms · 4 KiB write + fsync on this disk ${formatValue(fl.fsync)} ms`,
  );
  console.log(`serving CPU per turn in the parallel phase, by process (ms, the round with the median total): ${cpuNotes(p)}`);
  console.log(
    `parallel throughput by round, in the order run (turns/s): ${[...p].map(([name, r]) => `${name} ${r.throughput.map((v) => formatValue(v)).join(", ")}`).join(" · ")}`,
  );
  if (storageNotes.length > 0) console.log(`storage growth per turn (B) by Durable Object class or database file: ${storageNotes.join(" · ")}`);
  console.log(
    `machine: ${availableParallelism()} cores, Node ${process.version}; 1-minute load average over the phases ${formatValue(Math.min(...loads))}–${formatValue(Math.max(...loads))}`,
  );
  console.log(`ours' model stand-in received ${ours.stubCalls()} requests (the echo model answers in the host); ours ran at LOG_LEVEL=${cfg.oursLogLevel}`);
  console.log("");
  for (const m of metrics) console.log(summaryLine(m));
  console.log(
    `bench peers floors http_ms=${formatValue(fl.http)} worker_ms=${formatValue(fl.worker)} ws_do_ms=${formatValue(fl.ws)} fsync_ms=${formatValue(fl.fsync)}`,
  );
  log(`done in ${elapsed()}`);
}

const cleanup = new Cleanup();
/** The servers' logs, shown when a run fails. */
const logFiles: string[] = [];
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  // `on`, not `once`: a second signal (npm and tsx pass theirs on too) must not end the run before
  // its cleanup has stopped every server.
  process.on(sig, () => {
    log(`${sig}: stopping every process this run started …`);
    void cleanup.run().then(() => process.exit(130));
  });
}
// With the terminal gone, a write fails with EPIPE; the cleanup must still run.
for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});
try {
  await main(cleanup);
} catch (e) {
  process.exitCode = 1;
  console.error(e);
  // The servers' storage (and their logs) go with the cleanup: show the end of each log first.
  for (const f of logFiles) {
    if (!existsSync(f)) continue;
    const lines = readFileSync(f, "utf8")
      .split("\n")
      .filter((l) => !l.includes('"msg":"rpc"'));
    console.error(`--- last lines of ${basename(f)} ---\n${lines.slice(-30).join("\n")}`);
  }
} finally {
  await cleanup.run();
}
