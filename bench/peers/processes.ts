/**
 * The processes `npm run bench:peers` starts besides ours (bench/peers/run.ts): the peers' worker
 * under the project's own wrangler, the LangGraph runner, the bare HTTP server of the transport
 * floor, and strace. Each runs in its own process group, recorded in `Cleanup`, so a normal end,
 * an error or SIGINT takes every one of them down (wrangler's workerd children included).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, groupAlive, ROOT, sleep, WITHOUT_DEVTOOLS } from "../../scripts/dev-server.js";

/** Stop actions, run last-registered first; idempotent. */
export class Cleanup {
  private readonly _steps: (() => Promise<void>)[] = [];
  private _running: Promise<void> | undefined;

  add(step: () => Promise<void>): void {
    this._steps.push(step);
  }

  /** Every caller (the normal end, SIGINT, a SIGTERM that follows it) waits for the same one run. */
  run(): Promise<void> {
    this._running ??= (async () => {
      for (const step of this._steps.reverse()) {
        try {
          await step();
        } catch {
          // best effort: the next step still runs
        }
      }
    })();
    return this._running;
  }
}

/** SIGTERM to a process group, SIGKILL to what is left after a grace period; waits until it is gone. */
export async function stopGroup(child: ChildProcess, graceMs = 5000): Promise<void> {
  const group = child.pid;
  if (group === undefined) return;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((ok) => child.once("exit", () => ok()));
    try {
      process.kill(-group, "SIGTERM");
    } catch {
      // already gone
    }
    await Promise.race([exited, sleep(graceMs)]);
  }
  try {
    process.kill(-group, "SIGKILL");
  } catch {
    // already gone
  }
  for (let i = 0; i < 50 && groupAlive(group); i++) await sleep(100);
}

/** The wrangler process group that serves `persistDir` (its leader's command line names it). */
export function wranglerGroupOf(persistDir: string): number {
  const out = execFileSync("ps", ["-eo", "pid=,pgid=,args="], { encoding: "utf8" });
  for (const line of out.split("\n")) {
    const [pid, pgid, ...args] = line.trim().split(/\s+/);
    if (pid === pgid && args.join(" ").includes(`--persist-to ${persistDir}`)) return Number(pgid);
  }
  throw new Error(`no wrangler dev serves ${persistDir}`);
}

/** The pids of a group's processes named `comm` (e.g. the workerd processes of a wrangler dev), or all of them. */
export function groupPids(group: number, comm?: string): number[] {
  const out = execFileSync("ps", ["-eo", "pid=,pgid=,comm="], { encoding: "utf8" });
  return out
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter(([, g, c]) => Number(g) === group && (comm === undefined || c === comm))
    .map(([p]) => Number(p));
}

/** A process's name and its CPU time so far (user + system), from one `/proc/<pid>/stat` line. */
export function parseProcStat(line: string, ticksPerSecond: number): { comm: string; cpuMs: number } {
  // The name is in parentheses and may itself hold spaces and parentheses: it ends at the last ")".
  const close = line.lastIndexOf(")");
  const open = line.indexOf("(");
  if (open < 0 || close < open) throw new Error(`not a /proc/<pid>/stat line: ${JSON.stringify(line.slice(0, 80))}`);
  // After the name: state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15).
  const rest = line.slice(close + 2).split(" ");
  const ticks = Number(rest[11]) + Number(rest[12]);
  if (!Number.isFinite(ticks)) throw new Error(`no CPU times in /proc/<pid>/stat line: ${JSON.stringify(line.slice(0, 80))}`);
  return { comm: line.slice(open + 1, close), cpuMs: (ticks * 1000) / ticksPerSecond };
}

let clockTicks: number | undefined;

/**
 * The CPU time each live process of `pids` has used so far, with its name (a process that has
 * gone is left out). Clock ticks are 10 ms on Linux, so a window must be long (the parallel phase is).
 */
export function cpuTimes(pids: readonly number[]): Map<number, { comm: string; cpuMs: number }> {
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  const out = new Map<number, { comm: string; cpuMs: number }>();
  for (const pid of pids) {
    let line: string;
    try {
      line = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    out.set(pid, parseProcStat(line, clockTicks));
  }
  return out;
}

export interface PeersWorker {
  url: string;
  logFile: string;
  child: ChildProcess;
  persistDir: string;
}

/** `wrangler dev` of bench/peers/worker, with the same binary, flags and environment as ours (devtools detached too). */
export async function startPeersWorker(persistDir: string, cleanup: Cleanup): Promise<PeersWorker> {
  const port = await freePort();
  const inspector = await freePort();
  const logFile = join(persistDir, "wrangler.log");
  const fd = openSync(logFile, "a");
  const child = spawn(
    process.execPath,
    [
      join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
      "dev",
      "-c",
      join(ROOT, "bench/peers/worker/wrangler.jsonc"),
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspector),
      "--persist-to",
      persistDir,
      "--show-interactive-dev-session=false",
      "--log-level",
      "warn",
    ],
    {
      cwd: join(ROOT, "bench/peers"),
      detached: true,
      stdio: ["ignore", fd, fd],
      env: {
        ...process.env,
        WRANGLER_SEND_METRICS: "false",
        CI: "true",
        NO_COLOR: "1",
        CLOUDFLARE_CF_FETCH_ENABLED: "false",
        WRANGLER_LOG_PATH: join(persistDir, "wrangler-logs"),
        TMPDIR: persistDir,
        ...WITHOUT_DEVTOOLS,
      },
    },
  );
  closeSync(fd);
  cleanup.add(() => stopGroup(child));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the peers' wrangler dev exited with ${child.exitCode}:\n${readFileSync(logFile, "utf8").slice(-2000)}`);
    try {
      if ((await fetch(`${url}/floor`)).ok) return { url, logFile, child, persistDir };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`the peers' wrangler dev was not ready within 90 s; see ${logFile}`);
}

/** A trivial Node HTTP server in its own process: the bare HTTP round-trip floor. */
export async function startFloorServer(cleanup: Cleanup): Promise<string> {
  const src =
    "require('http').createServer((q,s)=>{q.resume();q.on('end',()=>s.end('ok'))}).listen(0,'127.0.0.1',function(){process.send(this.address().port)})";
  const child = spawn(process.execPath, ["-e", src], { detached: true, stdio: ["ignore", "ignore", "inherit", "ipc"] });
  cleanup.add(() => stopGroup(child));
  const port = await new Promise<number>((ok, fail) => {
    child.once("message", (m) => ok(Number(m)));
    child.once("exit", (code) => fail(new Error(`the floor server exited with ${code}`)));
  });
  child.disconnect();
  return `http://127.0.0.1:${port}`;
}
