/**
 * `agentctl harness serve` as a person runs it (a real subprocess) against the fake host, and the
 * example harnesses it serves (examples/harnesses/).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { toJson } from "@bufbuild/protobuf";
import { describe, expect, it, onTestFinished } from "vitest";
import { EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText, textOf, userText } from "../../../proto/messages.js";
import { ROOT } from "../../../scripts/dev-server.js";
import counter from "../../../examples/harnesses/counter.js";
import { AGENTCTL, spawnAgentctl as agentctl } from "../cli/run-agentctl.js";
import { startFakeHost } from "./fake-host.js";
import { serveOn } from "./support.js";

const j = (e: Event) => toJson(EventSchema, e) as Record<string, unknown>;

function spawnServe(args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.AGENTSESSIONS_SERVER;
  delete env.AGENTSESSIONS_TOKEN;
  const child = spawn(process.execPath, [AGENTCTL, "harness", "serve", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  const exited = once(child, "close") as Promise<[number | null, string | null]>;
  onTestFinished(() => void (child.exitCode === null && child.kill("SIGKILL")));
  return { child, exited, out: () => stdout, err: () => stderr };
}

describe("agentctl harness serve", () => {
  it("serves examples/harnesses/echo.ts: prints the serving line, runs a stream, exits 0 on Ctrl-C after Goodbye", async () => {
    const host = await startFakeHost({ token: "t0k" });
    onTestFinished(() => host.close());
    const p = spawnServe(["examples/harnesses/echo.ts", "--server", host.url, "--token", "t0k", "--max-streams", "2"]);
    const conn = await host.nextConnection().catch((e: unknown) => Promise.reject(new Error(`${String(e)}; stderr: ${p.err()}`)));
    const hello = await conn.hello();
    expect(hello).toMatchObject({ name: "example-echo", maxStreams: 2, descriptor: { id: "example-echo", version: "1", models: ["echo"] } });
    expect(conn.headers.authorization).toBe("Bearer t0k");
    await expect.poll(() => p.out(), { timeout: 10_000 }).toBe(`serving example-echo on ${host.url} (connection ${conn.id})\n`);

    conn.start("s1", { inputs: [userText("first"), userText("last one")] });
    const call = await conn.event("s1");
    expect(call.body.case === "model" && [call.body.value.model, textOf(call.body.value.messages[0])]).toEqual(["echo", "last one"]);
    conn.frame("s1", {
      frame: { case: "model", value: { message: assistantText("echo:last one"), modelCallId: call.body.case === "model" ? call.body.value.id : "" } },
    });
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });

    p.child.kill("SIGINT");
    await conn.goodbye();
    const [code] = await p.exited;
    expect(code).toBe(0);
    expect(p.err()).toContain("stopped serving example-echo");
    expect(p.out() + p.err()).not.toContain("t0k");
  });

  it("--name overrides the descriptor id", async () => {
    const host = await startFakeHost();
    onTestFinished(() => host.close());
    const p = spawnServe(["examples/harnesses/counter.ts", "--server", host.url, "--name", "my-counter"]);
    const conn = await host.nextConnection();
    expect(conn.url).toBe("/harness/v1/connect?name=my-counter");
    expect((await conn.hello()).descriptor?.id).toBe("counter");
    p.child.kill("SIGTERM");
    expect((await p.exited)[0]).toBe(0);
  });

  it("a refused token exits 1 with the host's reason", async () => {
    const host = await startFakeHost({ token: "right" });
    onTestFinished(() => host.close());
    const run = await agentctl(["harness", "serve", "examples/harnesses/echo.ts", "--server", host.url, "--token", "wrong"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("unauthenticated: bad or missing token");
    expect(run.stderr).not.toContain("wrong");
  });

  it("usage mistakes exit 2", async () => {
    expect((await agentctl(["harness"])).code).toBe(2);
    expect((await agentctl(["harness", "serve"])).stderr).toContain("needs a FILE");
    expect((await agentctl(["harness", "serve", "examples/harnesses/echo.ts", "--name", "Bad_Name"])).code).toBe(2);
    expect((await agentctl(["harness", "serve", "examples/harnesses/echo.ts", "--max-streams", "-1"])).code).toBe(2);
  });

  it("a module without a Harness export exits 1", async () => {
    const run = await agentctl(["harness", "serve", "examples/README.md", "--server", "http://127.0.0.1:1"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot load|must export a Harness/);
  });
});

describe("examples/harnesses/counter.ts", () => {
  it("run: each execution outputs the next integer, without reading history", async () => {
    const { conn } = await serveOn(counter, { name: "counter" });
    const hello = await conn.hello();
    expect(hello.descriptor).toMatchObject({ id: "counter", capabilities: { resumability: 2, forkSafe: false } });
    for (const [stream, n] of [
      ["a", "1"],
      ["b", "2"],
    ] as const) {
      conn.start(stream);
      expect(j(await conn.event(stream))).toMatchObject({ kind: "EVENT_OUTPUT", message: { parts: [{ text: { text: n } }] } });
      expect(j(await conn.event(stream))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });
    }
  });
});
