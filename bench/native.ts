/**
 * `npm run bench:native`: what a request costs workerd outside JavaScript, counted by Linux's
 * `perf` rather than timed. For each kind of request (a Worker-only request, the five-row call the
 * echo turn is compared with, the same call carrying an Exec's bytes, an echo turn and a chat turn)
 * it counts, per request and per workerd process of one `wrangler dev`:
 *
 * - how often workerd entered the isolate (`workerd::IoContext::runImpl`, a uprobe),
 * - SQLite statement steps (`sqlite3_step`, a uprobe),
 * - the storage's `fsync` and `pwrite64` calls and the sockets' `read`/`write` (syscall tracepoints),
 * - the process's CPU time (`task-clock`).
 *
 * Batches of each kind run interleaved (BENCH_NATIVE_ROUNDS rounds of BENCH_NATIVE_BATCH requests),
 * each counted by a `perf stat` attached to the running server. It answers a question the timings
 * cannot: whether a turn makes more trips into the isolate, more statements, more commits or more
 * I/O than its floor, or only runs more JavaScript. It asserts nothing, and no test runs it.
 *
 * Uprobes and tracepoints need root (or a lowered `perf_event_paranoid`); without them only the CPU
 * time is counted, and without `perf` the bench says so and stops. The uprobes it adds (group
 * `asbench`) are removed when it ends.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { ExecRequestSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../proto/messages.js";
import { envelopeFrame } from "../proto/record-envelopes.js";
import { ROOT } from "../scripts/dev-server.js";
import { floorObject, fmt, post, postBytes, STREAM_HEADERS, startBenchHost, wholeFromEnv } from "./lib.js";
import { groupPids, wranglerGroupOf } from "./peers/processes.js";

const ROUNDS = wholeFromEnv("BENCH_NATIVE_ROUNDS", 3);
const BATCH = wholeFromEnv("BENCH_NATIVE_BATCH", 300);
const WORKERD = join(ROOT, "node_modules/@cloudflare/workerd-linux-64/bin/workerd");
const GROUP = "asbench";

/** The counted events, with the label each row prints. */
const UPROBES = [
  { event: "runimpl", symbol: /^_ZN7workerd9IoContext7runImplE/, label: "entries into the isolate" },
  { event: "sqlstep", symbol: /^sqlite3_step$/, label: "SQLite statement steps" },
];
const SYSCALLS = [
  { event: "syscalls:sys_enter_fsync", label: "fsync" },
  { event: "syscalls:sys_enter_pwrite64", label: "pwrite64" },
  { event: "syscalls:sys_enter_write", label: "write" },
  { event: "syscalls:sys_enter_read", label: "read" },
];
const CPU = { event: "task-clock", label: "CPU (ms)" };

function perfAvailable(): boolean {
  try {
    execFileSync("perf", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Whether `perf stat` may count `event` on this machine (a tracepoint needs root or a low paranoid level). */
function countable(event: string): boolean {
  try {
    execFileSync("perf", ["stat", "-x", ",", "-e", event, "--", "true"], { stdio: "pipe" });
    return true;
  } catch {
    return false;
  }
}

/**
 * A uprobe's address is a file offset: a symbol's virtual address moved by the difference between
 * its loadable segment's address and offset (workerd is a position-independent executable).
 */
function fileOffset(vaddr: bigint): bigint {
  const out = execFileSync("readelf", ["-lW", WORKERD], { encoding: "utf8" });
  for (const line of out.split("\n")) {
    const m = /^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)/.exec(line);
    if (!m) continue;
    const [offset, addr, , memSize] = [BigInt(`0x${m[1]}`), BigInt(`0x${m[2]}`), m[3], BigInt(`0x${m[4]}`)];
    if (vaddr >= addr && vaddr < addr + memSize) return vaddr - addr + offset;
  }
  throw new Error(`no loadable segment of workerd holds 0x${vaddr.toString(16)}`);
}

/** Adds the uprobes it can; returns the events added (removed again by `removeUprobes`). */
function addUprobes(): string[] {
  let symbols: string;
  try {
    symbols = execFileSync("nm", [WORKERD], { encoding: "utf8", maxBuffer: 1 << 30 });
  } catch {
    console.log("native: workerd's symbols could not be read (nm); counting without uprobes");
    return [];
  }
  const added: string[] = [];
  removeUprobes();
  for (const p of UPROBES) {
    const line = symbols.split("\n").find((l) => {
      const [, kind, name] = l.split(" ");
      return (kind === "T" || kind === "t") && name !== undefined && p.symbol.test(name);
    });
    if (!line) continue;
    const offset = fileOffset(BigInt(`0x${line.split(" ")[0]}`));
    try {
      execFileSync("perf", ["probe", "-q", "-x", WORKERD, "-a", `${GROUP}:${p.event}=0x${offset.toString(16)}`], { stdio: "pipe" });
      added.push(`${GROUP}:${p.event}`);
    } catch {
      // not permitted here (uprobes need root): the row is left out
    }
  }
  return added;
}

function removeUprobes(): void {
  try {
    execFileSync("perf", ["probe", "-q", "-d", `${GROUP}:*`], { stdio: "pipe" });
  } catch {
    // none were there
  }
}

/** Runs `f` while one `perf stat` per pid counts `events`; the counts by pid. */
async function counted(pids: number[], events: string[], f: () => Promise<void>, dir: string): Promise<Map<number, Map<string, number>>> {
  const runs = pids.map((pid) => {
    const out = join(dir, `stat-${pid}.csv`);
    const child = spawn("perf", ["stat", "-x", ",", "-o", out, "-e", events.join(","), "-p", String(pid)], { stdio: "ignore" });
    return { pid, out, child, exited: new Promise<void>((ok) => child.once("exit", () => ok())) };
  });
  // perf stat attaches after it starts: a short pause, so the batch's first requests are counted.
  await new Promise((ok) => setTimeout(ok, 300));
  try {
    await f();
  } finally {
    for (const r of runs) r.child.kill("SIGINT");
    await Promise.all(runs.map((r) => r.exited));
  }
  const byPid = new Map<number, Map<string, number>>();
  for (const r of runs) {
    const counts = new Map<string, number>();
    // perf stat writes nothing when it could not attach (its cells then print as "-").
    const text = existsSync(r.out) ? readFileSync(r.out, "utf8") : "";
    for (const line of text.split("\n")) {
      const [value, , event] = line.split(",");
      if (event && events.includes(event)) counts.set(event, Number(value));
    }
    byPid.set(r.pid, counts);
  }
  return byPid;
}

async function main(): Promise<void> {
  if (process.platform !== "linux" || !perfAvailable()) {
    console.log("native: skipped, it needs Linux's perf (Debian's linux-perf package)");
    return;
  }
  if (!countable(CPU.event)) {
    console.log("native: skipped, perf may not count this user's processes (kernel.perf_event_paranoid)");
    return;
  }
  const dir = join(tmpdir(), `agentsessions-native-${process.pid}`);
  const { server, client } = await startBenchHost({ MODEL_BASE_URL: "http://127.0.0.1:9/v1", LOG_LEVEL: "warn" });
  let uprobes: string[] = [];
  try {
    mkdirSync(dir, { recursive: true });
    uprobes = addUprobes();
    const syscalls = SYSCALLS.map((s) => s.event).filter(countable);
    const events = [...uprobes, ...syscalls, CPU.event];
    const u = server.url;
    const echo = (await client.create({ name: "bench-native-echo" })).metadata!.uid;
    const chat = (await client.create({ name: "bench-native-chat", harness: "chat", model: "echo" })).metadata!.uid;
    const floor = floorObject(echo);
    const execFrame = envelopeFrame(0, toBinary(ExecRequestSchema, create(ExecRequestSchema, { session: echo, inputs: [userText("hello there")] })));
    const kinds: Record<string, { label: string; run: () => Promise<unknown> }> = {
      worker: { label: "a request the Worker answers alone (/healthz)", run: () => postBytes(`${u}/healthz`) },
      five: { label: "one call into an object that appends five rows (/_bench/five)", run: () => post(`${u}/_bench/five?object=${floor}`) },
      sized: {
        label: "the same, sent an Exec's request and answered as many bytes as an echo turn",
        run: () => postBytes(`${u}/_bench/five-sized?object=${floor}`, { headers: STREAM_HEADERS, body: execFrame }),
      },
      echo: { label: "an echo turn", run: () => client.exec({ session: echo, inputs: ["hello there"] }) },
      chat: { label: "a chat turn with the host's echo model", run: () => client.exec({ session: chat, inputs: ["hello there"] }) },
    };
    for (const k of Object.values(kinds)) for (let i = 0; i < 200; i++) await k.run();

    const pids = groupPids(wranglerGroupOf(server.persistDir), "workerd");
    const totals = new Map<string, Map<number, Map<string, number>>>();
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, k] of Object.entries(kinds)) {
        const byPid = await counted(
          pids,
          events,
          async () => {
            for (let i = 0; i < BATCH; i++) await k.run();
          },
          dir,
        );
        const t = totals.get(name) ?? new Map<number, Map<string, number>>();
        for (const [pid, counts] of byPid) {
          const sum = t.get(pid) ?? new Map<string, number>();
          for (const [e, v] of counts) sum.set(e, (sum.get(e) ?? 0) + v);
          t.set(pid, sum);
        }
        totals.set(name, t);
      }
      console.log(`native: round ${r + 1} of ${ROUNDS} counted`);
    }
    const n = ROUNDS * BATCH;
    const per = (kind: string, pid: number, event: string) => (totals.get(kind)?.get(pid)?.get(event) ?? Number.NaN) / n;
    // The process that commits the five-row call's rows runs the isolate; the other is wrangler's proxy.
    const isolate =
      pids.find((pid) => per("five", pid, "syscalls:sys_enter_fsync") > 0.5) ??
      pids.reduce((a, b) => (per("echo", b, CPU.event) > per("echo", a, CPU.event) ? b : a));
    const labels = new Map<string, string>([
      ...UPROBES.map((p) => [`${GROUP}:${p.event}`, p.label] as const),
      ...SYSCALLS.map((s) => [s.event, s.label] as const),
      [CPU.event, CPU.label],
    ]);
    const names = Object.keys(kinds);
    const cell = (v: number) => (Number.isFinite(v) ? fmt(v, 2) : "-");
    console.log(
      `native: per request, ${ROUNDS} rounds of ${BATCH} (${uprobes.length === 0 ? "no uprobes: run as root to count entries and statements" : "uprobes on"})`,
    );
    for (const [k, v] of Object.entries(kinds)) console.log(`  ${k.padEnd(6)} ${v.label}`);
    for (const pid of pids) {
      console.log(`workerd ${pid}${pid === isolate ? " (the Worker's and the objects' isolate)" : " (wrangler's proxy)"}:`);
      console.log(`  ${"".padEnd(26)}${names.map((k) => k.padStart(9)).join("")}`);
      for (const e of events) console.log(`  ${labels.get(e)!.padEnd(26)}${names.map((k) => cell(per(k, pid, e)).padStart(9)).join("")}`);
    }
    const cpu = (kind: string) => per(kind, isolate, CPU.event);
    const at = (kind: string, e: string) => fmt(per(kind, isolate, e), 2);
    console.log(
      `bench native echo_over_five_cpu=${fmt(cpu("echo") / cpu("five"), 2)} echo_minus_five_cpu_ms=${fmt(cpu("echo") - cpu("five"), 2)} entries_echo=${at("echo", `${GROUP}:runimpl`)} entries_five=${at("five", `${GROUP}:runimpl`)} steps_echo=${at("echo", `${GROUP}:sqlstep`)} steps_five=${at("five", `${GROUP}:sqlstep`)} fsync_echo=${at("echo", "syscalls:sys_enter_fsync")} fsync_five=${at("five", "syscalls:sys_enter_fsync")}`,
    );
  } finally {
    if (uprobes.length > 0) removeUprobes();
    await server.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
