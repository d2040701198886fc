/**
 * agentctl with the `chat` harness against a server of its own whose model provider is a real HTTP
 * stand-in (test/node/support/fake-openai.ts) that answers `answer #<n>: <last user text>` and
 * counts requests: a streamed turn prints its OUTPUT record, `verify --replay` re-produces it with
 * zero model calls (the stand-in sees no new request), on a terminal the streamed text is shown
 * inline on stdout ahead of the records, and an inputless exec recovers a turn cut by a crash.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../../cli/main.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";
import { type Host, startHost } from "../support/host.js";
import { agentctl, sessionOf } from "./run-agentctl.js";

let fake: FakeOpenAi;
let server: Host;
let S: string[];
let uid = "";

beforeAll(async () => {
  fake = await startFakeOpenAi();
  // Without MODEL_DEFAULT (or a session model) the host resolves chat's "" model to the built-in
  // echo model even though a provider is configured, so the stand-in would never be asked.
  server = await startHost({ vars: { MODEL_BASE_URL: fake.url, MODEL_DEFAULT: "stand-in-1" } });
  S = ["--server", server.url];
});

afterAll(async () => {
  await server?.stop();
  await fake?.close();
});

describe("agentctl with the chat harness", () => {
  it("exec --harness chat: prints the OUTPUT answer #1: hi after one provider request", async () => {
    const r = await agentctl([...S, "exec", "--harness", "chat", "--input", "hi"]);
    expect(r.code, r.stderr).toBe(0);
    uid = sessionOf(r);
    expect(r.lines).toContain("seq=2  EVENT_INPUT  user: hi");
    expect(r.lines.filter((l) => l.includes("EVENT_OUTPUT"))).toEqual([expect.stringMatching(/^seq=\d+ {2}EVENT_OUTPUT {2}assistant: answer #1: hi$/)]);
    expect(r.lines.at(-1)).toMatch(/^seq=\d+ {2}EVENT_END {2}state=COMPLETED$/);
    // stdout is a pipe here, so the streamed text went to stderr, in full.
    expect(r.stderr).toBe("answer #1: hi\n");
    expect(fake.requests.length).toBe(1);
    expect(fake.requests[0]?.body).toMatchObject({ model: "stand-in-1", stream: true });
  });

  it("verify --replay: the chat session's output comes back with 0 model calls and no new request", async () => {
    expect(uid).not.toBe("");
    const r = await agentctl([...S, "verify", uid, "--replay"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines.slice(1)).toEqual(["REPLAYED 1 output, 0 model calls", '  output 1: "answer #1: hi"']);
    const j = await agentctl([...S, "--json", "verify", uid, "--replay"]);
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: true, replay: { ok: true, outputs: ["answer #1: hi"], modelCalls: "0" } });
    expect(fake.requests.length).toBe(1);
  });

  it("exec on a terminal: the streamed text is inline on stdout, then the OUTPUT record line", async () => {
    let out = "";
    let err = "";
    const code = await runCli([...S, "exec", "--harness", "chat", "--input", "again"], {
      out: { write: (s: string) => (out += s) },
      err: { write: (s: string) => (err += s) },
      outIsTty: true,
      env: {},
      readStdin: async () => "",
    });
    expect(code, err).toBe(0);
    expect(err).toBe("");
    const lines = out.split("\n");
    const streamed = lines.indexOf("answer #2: again");
    const output = lines.findIndex((l) => /^seq=\d+ {2}EVENT_OUTPUT {2}assistant: answer #2: again$/.test(l));
    expect(streamed).toBeGreaterThan(0);
    expect(output).toBeGreaterThan(streamed);
    expect(lines.at(-2)).toMatch(/^seq=\d+ {2}EVENT_END {2}state=COMPLETED$/);
    expect(fake.requests.length).toBe(2);
  });

  // Kills this file's server, so it runs last.
  it("exec --session without --input: recovers a turn the server was killed in, with one provider call", async () => {
    const id = sessionOf(await agentctl([...S, "create", "--harness", "chat"]));
    fake.next = () => ({ kind: "hold" });
    const before = fake.requests.length;
    const cut = agentctl([...S, "exec", "--session", id, "--input", "survive"]);
    await fake.waitForRequests(before + 1);
    fake.next = () => ({ kind: "answer" });
    await server.kill();
    fake.releaseHeld();
    await server.restart();
    expect((await cut).code).toBe(1);

    const r = await agentctl([...S, "exec", "--session", id]);
    expect(r.code, r.stderr).toBe(0);
    // Only what the re-drive committed is streamed: the recorded prefix (seq 1-3) is not repeated.
    expect(r.lines).toEqual([`session ${id}`, `seq=4  EVENT_OUTPUT  assistant: answer #${before + 2}: survive`, "seq=5  EVENT_END  state=COMPLETED"]);
    expect(r.stderr).toBe(`answer #${before + 2}: survive\n`);
    expect(fake.requests.length).toBe(before + 2);
    // The recovery Exec journals no RESUME marker, unlike `agentctl resume`.
    const replay = await agentctl([...S, "replay", id]);
    expect(replay.lines.map((l) => l.split("  ")[1])).toEqual(["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_MODEL_CALL", "EVENT_OUTPUT", "EVENT_END"]);
  });
});
