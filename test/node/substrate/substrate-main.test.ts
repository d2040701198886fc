/**
 * `npm run substrate` (runtimes/substrate/main.ts) as a real subprocess against the stand-in
 * ateapi: it listens and logs JSON lines, requires the host's bearer token when given one (and
 * never prints it), places and restores the counter with its count, answers Describe from a JSON
 * descriptor, refuses bad flags with exit 2, and exits 0 on SIGTERM leaving the actors as they are.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorState } from "../../../proto/gen/ateapi/control_pb.js";
import { freePort } from "../../../scripts/dev-server.js";
import { createHttpRuntime } from "../../../runtimes/http/index.js";
import { startStandin, type Standin } from "../../fixtures/ateapi/standin.js";
import { startFakeTunnel, type FakeTunnel } from "../pod/fake-tunnel.js";
import { ROOT, until } from "../pod/support.js";
import { ATESPACE, HARNESSES, uid } from "./support.js";

const TOKEN = "rt_bridge_0123456789abcdef";
let standin: Standin;
let tunnel: FakeTunnel;
let dir: string;

beforeAll(async () => {
  standin = await startStandin({ atespaces: [ATESPACE], templates: { counter: HARNESSES.counter } });
  tunnel = await startFakeTunnel({ oneTime: true });
  dir = mkdtempSync(join(tmpdir(), "substrate-main-"));
});
afterAll(async () => {
  await standin?.close();
  await tunnel?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Bridge {
  proc: ChildProcess;
  url: string;
  lines: string[];
  exited: Promise<number | null>;
}

function run(args: string[], env: Record<string, string> = {}): { proc: ChildProcess; lines: string[]; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, ["--import", "tsx", "runtimes/substrate/main.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  createInterface({ input: proc.stdout! }).on("line", (l) => lines.push(l));
  createInterface({ input: proc.stderr! }).on("line", (l) => lines.push(l));
  return { proc, lines, exited: once(proc, "close").then(([code]) => code as number | null) };
}

async function startBridge(extra: string[], env: Record<string, string> = {}): Promise<Bridge> {
  const b = run(
    ["--ateapi", standin.url, "--atespace", ATESPACE, "--template", "counter", "--router", standin.routerUrl, "--port", String(await freePort()), ...extra],
    env,
  );
  let url = "";
  await until(() => {
    for (const l of b.lines) url ||= /"msg":"listening","url":"([^"]+)"/.exec(l)?.[1] ?? "";
    return url !== "" || b.proc.exitCode !== null;
  }, "the bridge to listen");
  if (!url) throw new Error(`the bridge exited: ${b.lines.join("\n")}`);
  return { ...b, url };
}

describe("npm run substrate", () => {
  it("main: with a token, places and restores the counter (its count kept); SIGTERM exits 0, the actor stays; no token is printed", async () => {
    const b = await startBridge(["--harness", `counter=${HARNESSES.counter}`], { AGENTSESSIONS_RUNTIME_TOKEN: TOKEN });
    const runtime = createHttpRuntime({ baseUrl: b.url, token: TOKEN, timeoutMs: 45_000 });
    const u = uid();
    const inc = await runtime.create({ sessionUid: u, harness: "counter", dialback: tunnel.dialback("counter", u) });
    expect(await tunnel.exec(u)).toEqual(["1"]);
    const ref = await runtime.snapshot(inc, "EXTERNAL");
    await runtime.restore(ref, { sessionUid: u, harness: "counter", dialback: tunnel.dialback("counter", u) });
    expect(await tunnel.exec(u)).toEqual(["2"]);
    await runtime.snapshot(inc, "EXTERNAL");

    const anonymous = await createHttpRuntime({ baseUrl: b.url })
      .describe("counter")
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(anonymous?.code).toBe(Code.Unauthenticated);

    b.proc.kill("SIGTERM");
    expect(await b.exited).toBe(0);
    expect(standin.actor(u)?.state).toBe(ActorState.SUSPENDED);
    const log = b.lines.join("\n");
    expect(log).toContain('"authentication":"bearer token"');
    expect(log).toContain('"msg":"rpc","method":"Restore"');
    expect(log).not.toContain(TOKEN);
    for (const t of tunnel.tokens()) expect(log).not.toContain(t);
  });

  it("main: --harness NAME=FILE.json answers Describe from the descriptor, without the harness's code", async () => {
    const file = join(dir, "counter.json");
    writeFileSync(file, JSON.stringify({ id: "counter", version: "9", capabilities: { resumability: "RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT" } }));
    const b = await startBridge(["--harness", `counter=${file}`]);
    try {
      const d = await createHttpRuntime({ baseUrl: b.url }).describe("counter");
      expect([d.id, d.version]).toEqual(["counter", "9"]);
    } finally {
      b.proc.kill("SIGTERM");
      await b.exited;
    }
  });

  it("main: a missing flag, a bad URL or a non-loopback --host without a token is a usage error (exit 2)", async () => {
    for (const [args, says] of [
      [["--atespace", ATESPACE, "--template", "counter", "--harness", `counter=${HARNESSES.counter}`], "--ateapi is required"],
      [
        ["--ateapi", "grpc://x", "--atespace", ATESPACE, "--template", "counter", "--harness", `counter=${HARNESSES.counter}`],
        "--ateapi must be http: or https:",
      ],
      [
        ["--ateapi", standin.url, "--atespace", ATESPACE, "--template", "counter", "--harness", `counter=${HARNESSES.counter}`, "--host", "0.0.0.0"],
        "AGENTSESSIONS_RUNTIME_TOKEN",
      ],
    ] as const) {
      const r = run([...args]);
      expect(await r.exited).toBe(2);
      expect(r.lines.join("\n")).toContain(says);
    }
  });
});
