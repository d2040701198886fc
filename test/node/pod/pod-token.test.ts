/**
 * Bearer-token authentication of the pod's Runtime service (runtimes/node/bearer-token.ts,
 * docs/runtimes.md "Authentication"): with a token, every call without it is UNAUTHENTICATED before
 * anything runs; the host's client sends it; the token never reaches a log line. `npm run pod`
 * refuses a non-loopback address without a token, and a token too short to be a secret.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComputeState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { createHttpRuntime, isRetryableRuntimeError } from "../../../runtimes/http/index.js";
import { loadHarnessModules, startPodServer, type PodServer } from "../../../runtimes/pod/index.js";
import { startFakeTunnel, type FakeTunnel } from "./fake-tunnel.js";
import { HARNESSES, ROOT, uid } from "./support.js";
import { rejection } from "../support/rejection.js";

const TOKEN = "rt_0123456789abcdef0123456789abcdef";
let pod: PodServer;
let tunnel: FakeTunnel;
const logs: string[] = [];

beforeAll(async () => {
  tunnel = await startFakeTunnel();
  const harnesses = await loadHarnessModules([{ name: "echo2", path: HARNESSES.echo2 }]);
  pod = await startPodServer({ harnesses, token: TOKEN, log: (f) => void logs.push(JSON.stringify(f)), stopGraceMs: 2_000 });
});
afterAll(async () => {
  await pod?.close();
  await tunnel?.close();
});

describe("pod: bearer token", () => {
  it("token: a call without it is UNAUTHENTICATED, terminal, and starts nothing", async () => {
    const anonymous = createHttpRuntime({ baseUrl: pod.url });
    const u = uid();
    const e = await rejection(anonymous.create({ sessionUid: u, harness: "echo2", dialback: tunnel.dialback("echo2", u) }));
    expect(e.code).toBe(Code.Unauthenticated);
    expect(isRetryableRuntimeError(e)).toBe(false);
    expect(e.rawMessage).toContain("Authorization: Bearer");
    expect(tunnel.connections.filter((c) => c.session === `default/${u}`)).toHaveLength(0);
  });

  it("token: a wrong token is UNAUTHENTICATED too", async () => {
    const wrong = createHttpRuntime({ baseUrl: pod.url, token: `${TOKEN}x` });
    expect((await rejection(wrong.describe("echo2"))).code).toBe(Code.Unauthenticated);
  });

  it("token: the host's client sends it, and every RPC works; no log line carries it", async () => {
    const runtime = createHttpRuntime({ baseUrl: pod.url, token: TOKEN });
    expect((await runtime.describe("echo2")).id).toBe("example-echo");
    const u = uid();
    const inc = await runtime.create({ sessionUid: u, harness: "echo2", dialback: tunnel.dialback("echo2", u) });
    expect(await runtime.status(inc)).toBe(ComputeState.COMPUTE_LIVE);
    await runtime.stop(inc);
    expect(logs.some((l) => l.includes('"method":"Create"'))).toBe(true);
    expect(logs.join("\n")).not.toContain(TOKEN);
  });

  it("forkMany: the pod refuses a memory fan-out FAILED_PRECONDITION (it takes no memory snapshots)", async () => {
    const runtime = createHttpRuntime({ baseUrl: pod.url, token: TOKEN });
    const parent = uid();
    const child = uid();
    const e = await rejection(
      runtime.forkMany(
        { $typeName: "agentsessions.v1.SnapshotRef", local: parent, externalUri: "", memory: true, sealed: false },
        [{ sessionUid: child, dialback: tunnel.dialback("echo2", child) }],
        {
          sessionUid: parent,
          harness: "echo2",
        },
      ),
    );
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("memory snapshots");
  });
});

describe("npm run pod: token flags", () => {
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const proc = spawn(process.execPath, ["--import", "tsx", "runtimes/pod/main.ts", "--harness", `echo2=${HARNESSES.echo2}`, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const [code] = await once(proc, "close");
    return { code: code as number, out };
  };

  it("main: a non-loopback --host without a token is a usage error (exit 2) naming the variable", async () => {
    const { code, out } = await run(["--host", "0.0.0.0", "--port", "0"]);
    expect(code).toBe(2);
    expect(out).toContain("AGENTSESSIONS_RUNTIME_TOKEN");
  });

  it("main: a token shorter than 16 characters is refused without echoing it", async () => {
    const { code, out } = await run(["--port", "0"], { AGENTSESSIONS_RUNTIME_TOKEN: "short-secret" });
    expect(code).toBe(2);
    expect(out).toContain("at least 16");
    expect(out).not.toContain("short-secret");
  });
});
