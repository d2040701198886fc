/**
 * `npm run pod` (runtimes/pod/main.ts) as a real subprocess: it listens and logs JSON lines, a
 * SIGTERM stops every incarnation before it exits 0, and a pod killed outright takes its
 * incarnations with it (they watch the IPC channel).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../scripts/dev-server.js";
import { createHttpRuntime } from "../../../runtimes/http/index.js";
import { startFakeTunnel, type FakeTunnel } from "./fake-tunnel.js";
import { HARNESSES, ROOT, isGone, isRunning, pidOf, uid, until } from "./support.js";

interface Pod {
  proc: ChildProcess;
  url: string;
  lines: string[];
  exited: Promise<number | null>;
}

async function startPod(args: string[]): Promise<Pod> {
  const proc = spawn(process.execPath, ["--import", "tsx", "runtimes/pod/main.ts", ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  createInterface({ input: proc.stdout! }).on("line", (l) => lines.push(l));
  createInterface({ input: proc.stderr! }).on("line", (l) => lines.push(l));
  const exited = once(proc, "exit").then(([code]) => code as number | null);
  let url = "";
  await until(() => {
    for (const l of lines) {
      const m = /"msg":"listening","url":"([^"]+)"/.exec(l);
      if (m) url = m[1]!;
    }
    return url !== "" || proc.exitCode !== null;
  }, "the pod to listen");
  if (!url) throw new Error(`the pod exited: ${lines.join("\n")}`);
  return { proc, url, lines, exited };
}

let tunnel: FakeTunnel;
beforeAll(async () => {
  tunnel = await startFakeTunnel();
});
afterAll(async () => {
  await tunnel?.close();
});

describe("npm run pod", () => {
  it("main: SIGTERM stops every incarnation, then the pod exits 0; logs carry no token", async () => {
    const pod = await startPod([
      "--port",
      String(await freePort()),
      "--harness",
      `echo2=${HARNESSES.echo2}`,
      "--harness",
      "counter=examples/harnesses/counter.ts",
    ]);
    const runtime = createHttpRuntime({ baseUrl: pod.url });
    expect((await runtime.describe("counter")).id).toBe("counter");
    const u = uid();
    const dialback = tunnel.dialback("echo2", u);
    const inc = await runtime.create({ sessionUid: u, harness: "echo2", dialback });
    const pid = pidOf(inc);
    expect(isRunning(pid)).toBe(true);

    pod.proc.kill("SIGTERM");
    expect(await pod.exited).toBe(0);
    expect(isGone(pid)).toBe(true);
    const log = pod.lines.join("\n");
    expect(log).toContain('"msg":"rpc","method":"Create"');
    expect(log).not.toContain(dialback.token);
  });

  it("main: a pod killed outright takes its incarnations with it", async () => {
    const pod = await startPod(["--port", String(await freePort()), "--harness", `echo2=${HARNESSES.echo2}`]);
    const runtime = createHttpRuntime({ baseUrl: pod.url });
    const u = uid();
    const inc = await runtime.create({ sessionUid: u, harness: "echo2", dialback: tunnel.dialback("echo2", u) });
    pod.proc.kill("SIGKILL");
    await pod.exited;
    await until(() => isGone(pidOf(inc)), "the orphaned incarnation to end");
  });

  it("main: no --harness is a usage error (exit 2)", async () => {
    const proc = spawn(process.execPath, ["--import", "tsx", "runtimes/pod/main.ts", "--port", "0"], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const [code] = await once(proc, "exit");
    expect(code).toBe(2);
    expect(err).toContain("--harness");
  });
});
