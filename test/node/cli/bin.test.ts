/**
 * agentctl as a real process (`node cli/bin/agentctl.js`, the bin from source through tsx): what
 * the in-process tests beside this file cannot see — the bin starts, `main` wires real stdio,
 * stdin and the environment, and the exit status reaches the shell. One full turn runs against the
 * shared `wrangler dev`. Every other agentctl behaviour is tested in process (run-agentctl.ts).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { freePort, ROOT } from "../../../scripts/dev-server.js";
import { SDK_VERSION } from "../../../sdk/harness/version.js";
import { AGENTCTL, spawnAgentctl } from "./run-agentctl.js";

const server = inject("serverUrl");

const TURN_HELLO = [
  "seq=1  EVENT_EXECUTION_START  harness=echo inputs=1",
  "seq=2  EVENT_INPUT  user: hello",
  "seq=3  EVENT_MODEL_CALL  model=echo",
  "seq=4  EVENT_OUTPUT  assistant: echo:hello",
  "seq=5  EVENT_END  state=COMPLETED",
];

describe("agentctl as a process", () => {
  it("--version: prints agentctl and the SDK version, exit 0", async () => {
    const r = await spawnAgentctl(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`agentctl ${SDK_VERSION}\n`);
    expect(r.stderr).toBe("");
  });

  it("exec: a full turn against the host prints the session and its five records, exit 0", async () => {
    const r = await spawnAgentctl(["--server", server, "exec", "--input", "hello"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines[0]).toMatch(/^session sess-[0-9a-f]{24}$/);
    expect(r.lines.slice(1)).toEqual(TURN_HELLO);
  });

  it("AGENTSESSIONS_SERVER: the process environment names the server when --server is absent", async () => {
    const r = await spawnAgentctl(["exec", "--input", "hello"], { env: { AGENTSESSIONS_SERVER: server } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines.slice(1)).toEqual(TURN_HELLO);
  });

  it("hash: reads the event from piped stdin and prints the §7.4 G3 vector", async () => {
    const G3 = `{"execution_id":"exec-default","kind":"EVENT_EXECUTION_START","execution_start":{"input_count":"0"}}`;
    const r = await spawnAgentctl(["hash", "--seq", "1"], { stdin: G3 });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("b09cbff45d5a30990c3b72be8b06af6bc509d5a29a849aab5fd42153ef10ec65\n");
  });

  it("exit status: a usage mistake exits 2 with usage on stderr; an unreachable server exits 1", async () => {
    const usage = await spawnAgentctl(["frobnicate"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^agentctl: unknown command "frobnicate"\n\nusage: agentctl <command>/);
    expect(usage.stdout).toBe("");

    const url = `http://127.0.0.1:${await freePort()}`;
    const down = await spawnAgentctl(["--server", url, "list"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`agentctl list: cannot reach ${url}: is the server running? (npm start, or pass --server)\n`);
    expect(down.stdout).toBe("");
  });

  it("verify: checks a session's chain without loading Node's fetch implementation (undici: about 20 ms of the run)", async () => {
    const made = await spawnAgentctl(["--server", server, "exec", "--input", "hello"]);
    expect(made.code, made.stderr).toBe(0);
    const uid = made.lines[0]!.slice("session ".length);
    // Loaded before the CLI: says at exit whether Node ever loaded its fetch implementation.
    const dir = mkdtempSync(join(tmpdir(), "verify-undici-"));
    const probe = join(dir, "probe.cjs");
    writeFileSync(
      probe,
      'process.on("exit", () => process.stderr.write("undici loaded: " + process.moduleLoadList.some((m) => m.includes("undici")) + "\\n"));\n',
    );
    try {
      const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
      delete env.AGENTSESSIONS_SERVER;
      delete env.AGENTSESSIONS_TOKEN;
      const child = spawn(process.execPath, ["--require", probe, AGENTCTL, "--server", server, "verify", "--session", uid], {
        cwd: ROOT,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
      const [code] = (await once(child, "close")) as [number | null];
      expect(code, stderr).toBe(0);
      expect(stdout).toMatch(/^VERIFIED 5 records head=[0-9a-f]{64}\n$/);
      expect(stderr).toBe("undici loaded: false\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("exec | head -1: a reader that hangs up after the first line is not an error, exit 0", async () => {
    const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
    delete env.AGENTSESSIONS_SERVER;
    delete env.AGENTSESSIONS_TOKEN;
    const child = spawn(process.execPath, [AGENTCTL, "--server", server, "exec", "--input", "hello"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    const exited = once(child, "close") as Promise<[number | null, string | null]>;
    // Like `head -1`: read the first chunk, then close the pipe while agentctl may still write.
    const [first] = (await once(child.stdout, "data")) as [Buffer];
    child.stdout.destroy();
    expect(first.toString("utf8")).toMatch(/^session sess-[0-9a-f]{24}\n/);
    const [code, signal] = await exited;
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
  });
});
