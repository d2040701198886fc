/**
 * Shared pieces of the pod tests: the pod server in process with the example harnesses and a log
 * that is kept (to check it never carries a token), the HTTP runtime client pointed at it, and
 * bounded polling of process states through /proc.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createHttpRuntime, type HttpRuntime } from "../../../runtimes/http/index.js";
import { loadHarnessModules, startPodServer, type PodServer } from "../../../runtimes/pod/index.js";
import type { Incarnation } from "../../../runtimes/runtime-spi.js";
import { startFakeTunnel, type FakeTunnel } from "./fake-tunnel.js";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const HARNESSES = {
  counter: resolve(ROOT, "examples/harnesses/counter.ts"),
  echo2: resolve(ROOT, "examples/harnesses/echo.ts"),
};

export interface PodFixture {
  pod: PodServer;
  runtime: HttpRuntime;
  tunnel: FakeTunnel;
  logs: string[];
  close(): Promise<void>;
}

export async function startPodFixture(): Promise<PodFixture> {
  const tunnel = await startFakeTunnel();
  const logs: string[] = [];
  const harnesses = await loadHarnessModules(Object.entries(HARNESSES).map(([name, path]) => ({ name, path })));
  const pod = await startPodServer({ harnesses, log: (f) => void logs.push(JSON.stringify(f)), stopGraceMs: 3_000 });
  const runtime = createHttpRuntime({ baseUrl: pod.url });
  return {
    pod,
    runtime,
    tunnel,
    logs,
    async close() {
      await pod.close();
      await tunnel.close();
    },
  };
}

/** The child pid an incarnation names: its worker is `<hostname>/<pid>`. */
export function pidOf(inc: Incarnation): number {
  const pid = Number(inc.worker.slice(inc.worker.lastIndexOf("/") + 1));
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no pid in worker ${JSON.stringify(inc.worker)}`);
  return pid;
}

/** The process state letter from /proc/<pid>/stat (R, S, T, Z, …), or undefined if it is gone. */
export function procState(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // "pid (comm) S …": comm may hold spaces and parentheses, so split after the last ')'.
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
}

/** Running or sleeping, not stopped, not a zombie, not gone. */
export function isRunning(pid: number): boolean {
  const s = procState(pid);
  return s !== undefined && s !== "T" && s !== "t" && s !== "Z" && s !== "X";
}

export function isGone(pid: number): boolean {
  const s = procState(pid);
  return s === undefined || s === "Z" || s === "X";
}

/**
 * Polls `cond` every 20 ms until it holds, failing with `what` after `ms`. The default is long
 * (45 s, under the 60 s test timeout): an incarnation starts Node and tsx, seconds on a busy machine.
 */
export async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 45_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

let n = 0;
/** A fresh session uid per call, so tests do not share incarnations. */
export function uid(): string {
  n++;
  return `sess-${process.pid.toString(16).padStart(8, "0")}${n.toString(16).padStart(16, "0")}`;
}
