/**
 * Counts the fsync and fdatasync calls a system's processes make while `work` runs, with
 * `strace -f -c` attached to them (every thread, and threads started meanwhile). The count covers
 * everything those processes do in the window, background work included: that is the honest cost.
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sleep } from "../../scripts/dev-server.js";
import type { Cleanup } from "./processes.js";

export function straceAvailable(): boolean {
  try {
    execFileSync("strace", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Sums the `calls` column of fsync/fdatasync rows of `strace -c` output. */
export function parseStraceCounts(text: string): number {
  let calls = 0;
  for (const line of text.split("\n")) {
    const cols = line.trim().split(/\s+/);
    const name = cols[cols.length - 1];
    if (name !== "fsync" && name !== "fdatasync") continue;
    // % time, seconds, usecs/call, calls, [errors], syscall
    const n = Number(cols[3]);
    if (Number.isFinite(n)) calls += n;
  }
  return calls;
}

export async function countFsyncs(pids: number[], dir: string, cleanup: Cleanup, work: () => Promise<void>): Promise<number> {
  const out = join(dir, `strace-${Date.now()}.txt`);
  const args = ["-f", "-c", "-e", "trace=fsync,fdatasync", "-o", out, ...pids.flatMap((p) => ["-p", String(p)])];
  const child = spawn("strace", args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += String(d)));
  const exited = new Promise<void>((ok) => child.once("exit", () => ok()));
  cleanup.add(async () => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  // strace says "Process N attached" once per pid it follows; work starts only after every one.
  const deadline = Date.now() + 20_000;
  while (pids.some((p) => !stderr.includes(`Process ${p} attached`))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`strace could not attach to ${pids.join(", ")}: ${stderr.trim()}`);
    await sleep(50);
  }
  await sleep(200);
  try {
    await work();
  } finally {
    child.kill("SIGINT");
    await exited;
  }
  const calls = parseStraceCounts(readFileSync(out, "utf8"));
  rmSync(out, { force: true });
  return calls;
}
