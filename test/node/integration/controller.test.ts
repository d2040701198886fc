/**
 * The controller end to end against a real `wrangler dev` and a real HTTP stand-in for an
 * OpenAI-compatible provider that counts requests and answers differently every time
 * (issue 3 "Done when"; docs/behaviour.md §2.2-2.5, checklist §8.1 #1, #3, #12-14, checklist §8.8 #40-41).
 *
 * The fault tests SIGKILL the server (wrangler and workerd) mid-turn and restart it on the same
 * storage, so they run in this file's own server, one after another.
 */
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Audit } from "../../../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { EventKind, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { textOf } from "../../../proto/messages.js";
import { SessionsClient } from "../../../sdk/client.js";
import { sleep, startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";

const KEY = "sk-fault-SECRET-4242";
let fake: FakeOpenAi;
let server: DevServer;
let client: SessionsClient;
let audit: ReturnType<typeof createClient<typeof Audit>>;

beforeAll(async () => {
  fake = await startFakeOpenAi();
  server = await startDevServer({
    vars: { MODEL_BASE_URL: fake.url, MODEL_DEFAULT: "stand-in-1", MODEL_API_KEY: KEY, TEST_HARNESSES: "1" },
  });
  client = new SessionsClient({ server: server.url });
  audit = createClient(Audit, createConnectTransport({ baseUrl: server.url, useBinaryFormat: true }));
});

afterAll(async () => {
  await server?.dispose();
  await fake?.close();
});

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}

const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));
const outputs = (rs: LogRecord[]) =>
  rs.flatMap((r) => (r.event?.kind === EventKind.EVENT_OUTPUT && r.event.body.case === "message" ? [textOf(r.event.body.value)] : []));

async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (cond()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Kills the server while `hold` keeps a turn in flight, then restarts it on the same storage. */
async function crashAndRestart(release: () => void): Promise<void> {
  await server.kill();
  release();
  await server.restart();
}

describe("controller with a real model provider", () => {
  it("exec: a live chat turn makes exactly one provider request; replay returns it with zero requests", async () => {
    const before = fake.requests.length;
    const turn = await client.exec({ harness: "chat", inputs: ["hi"] });
    const uid = turn.session.metadata!.uid;
    expect(fake.requests.length - before).toBe(1);
    expect(kinds(turn.records)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    const answer = turn.outputs[0]!;
    expect(answer).toMatch(/^answer #\d+: hi$/);
    const journal = await records(uid);

    const v = await audit.verify({ session: uid, replay: true });
    expect(v).toMatchObject({ chainOk: true, records: 5n, replayOk: true, outputs: [answer], modelCalls: 0n, divergence: "" });
    expect(fake.requests.length - before).toBe(1);
    expect(await records(uid)).toEqual(journal);
  });

  it("exec: streamed chunks arrive as deltas before the OUTPUT record; Replay carries only records", async () => {
    const order: string[] = [];
    const turn = await client.exec({
      harness: "chat",
      inputs: ["stream me"],
      onDelta: (d) => order.push(d.done ? "done" : "delta"),
      onRecord: (r) => order.push(EventKind[r.event!.kind]),
    });
    const firstDelta = order.indexOf("delta");
    expect(firstDelta).toBeGreaterThan(-1);
    expect(firstDelta).toBeLessThan(order.indexOf("EVENT_OUTPUT"));
    expect(order.indexOf("done")).toBeLessThan(order.indexOf("EVENT_OUTPUT"));
    const streamed = turn.deltas
      .filter((d) => !d.done)
      .map((d) => d.chunk)
      .join("");
    expect(streamed).toBe(turn.outputs[0]);
    expect(turn.deltas.every((d) => d.executionId === turn.records[0]!.event!.executionId)).toBe(true);
    expect(kinds(await records(turn.session.metadata!.uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
  });

  // The object sends its frames when it next waits (objects/exec-frames.ts FrameSink): a turn
  // waiting on its provider has already sent what it committed. Both Worker paths: binary (relayed
  // by worker/exec-stream-route.ts) and JSON (the router).
  for (const binary of [true, false]) {
    it(`exec (${binary ? "binary" : "JSON"}): the records before a provider call reach the client while the provider holds the call`, async () => {
      const over = binary ? client : new SessionsClient({ server: server.url, binary: false });
      fake.next = () => ({ kind: "hold" });
      const asked = fake.requests.length + 1;
      const seen: LogRecord[] = [];
      const turn = over.exec({ harness: "chat", inputs: ["wait for me"], onRecord: (r) => seen.push(r) }).catch((e) => ConnectError.from(e));
      await fake.waitForRequests(asked);
      await until("the records before the model call on the stream", () => seen.length >= 3);
      expect(kinds(seen)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL"]);
      fake.next = () => ({ kind: "answer" });
      fake.releaseHeld();
      // The provider's connection was cut: the turn fails, after it had streamed.
      expect(await turn).toBeInstanceOf(ConnectError);
    });
  }

  it("exec: the session's model selects the provider model, else MODEL_DEFAULT; the key stays in the header", async () => {
    const s = await client.create({ harness: "chat", model: "session-model-7" });
    await client.exec({ session: s.metadata!.uid, inputs: ["a"] });
    const withModel = fake.requests[fake.requests.length - 1]!;
    expect(withModel.body.model).toBe("session-model-7");
    expect(withModel.headers.authorization).toBe(`Bearer ${KEY}`);
    const t = await client.exec({ harness: "chat", inputs: ["b"] });
    expect(fake.requests[fake.requests.length - 1]!.body.model).toBe("stand-in-1");
    const call = t.records.find((r) => r.event?.body.case === "model")!;
    expect(call.event!.body.case === "model" && call.event!.body.value.model).toBe("stand-in-1");
    expect(JSON.stringify((await records(s.metadata!.uid)).map((r) => r.toString()))).not.toContain("SECRET");
  });

  it("exec: a provider error after MODEL_CALL journals ERROR and fails INTERNAL; Resume re-drives it with one call", async () => {
    fake.next = () => ({ kind: "error", status: 503 });
    const s = await client.create({ harness: "chat" });
    const uid = s.metadata!.uid;
    const err = await client.exec({ session: uid, inputs: ["flaky"] }).catch((e) => ConnectError.from(e));
    fake.next = () => ({ kind: "answer" });
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Internal);
    expect((err as ConnectError).rawMessage).toContain("503");
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR"]);
    expect((await client.get(uid)).execState).toBe(5); // EXEC_FAILED

    const before = fake.requests.length;
    const resumed = await client.raw.resume({ session: uid });
    expect(fake.requests.length - before).toBe(1);
    expect(resumed.computeState).toBe(2); // COMPUTE_LIVE
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR", "OUTPUT", "END", "LIFECYCLE"]);
    expect((await audit.verify({ session: uid, replay: true })).modelCalls).toBe(0n);
  });

  it("resume (checklist §8.17 #183): a model failure (HTTP 503, an Unavailable status) while Resume re-drives the turn fails INTERNAL with an ERROR journaled", async () => {
    fake.next = () => ({ kind: "error", status: 503 });
    const s = await client.create({ harness: "chat" });
    const uid = s.metadata!.uid;
    await client.exec({ session: uid, inputs: ["flaky"] }).catch(() => undefined);
    const failedOnce = kinds(await records(uid));
    expect(failedOnce.at(-1)).toBe("ERROR");

    const err = await client.raw.resume({ session: uid }).catch((e) => ConnectError.from(e));
    fake.next = () => ({ kind: "answer" });
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Internal);
    expect((err as ConnectError).rawMessage).toContain("503");
    const after = kinds(await records(uid));
    expect(after.slice(0, failedOnce.length)).toEqual(failedOnce);
    expect(after.at(-1)).toBe("ERROR");
    expect(after.filter((k) => k === "ERROR")).toHaveLength(2);
    expect(after).not.toContain("LIFECYCLE");
    expect((await client.get(uid)).execState).toBe(5); // EXEC_FAILED

    expect((await client.raw.resume({ session: uid })).computeState).toBe(2); // COMPUTE_LIVE
    expect(kinds(await records(uid)).slice(-3)).toEqual(["OUTPUT", "END", "LIFECYCLE"]);
  });

  // docs/contract.md §8 (Exec: "missing tool executor → FAILED_PRECONDITION") rather than the INTERNAL of
  // docs/behaviour.md's pre-approval tests (its §4.12 version note).
  it('tool (checklist §8.17 #167): without an executor a host-executed call fails the Exec FAILED_PRECONDITION "no tool executor configured" after its intent; an empty key fails INTERNAL before any intent', async () => {
    const s = await client.create({ harness: "tools" });
    const uid = s.metadata!.uid;
    const config = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
    const err = await client
      .exec({ session: uid, inputs: ["go"], config: config({ calls: [{ id: "c1", tool: "charge", args: { cents: 1 } }] }) })
      .catch((e) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).rawMessage).toContain("no tool executor configured");
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "ERROR"]);

    const s2 = await client.create({ harness: "tools" });
    const keyless = await client
      .exec({ session: s2.metadata!.uid, inputs: ["go"], config: config({ calls: [{ id: "c1", tool: "charge", key: "" }] }) })
      .catch((e) => ConnectError.from(e));
    expect((keyless as ConnectError).code).toBe(Code.Internal);
    expect(kinds(await records(s2.metadata!.uid))).toEqual(["EXECUTION_START", "INPUT", "ERROR"]);
  });

  it("exec: deadline_unix bounds a turn: a provider that never answers fails it DEADLINE_EXCEEDED", async () => {
    fake.next = () => ({ kind: "hold" });
    const s = await client.create({ harness: "chat" });
    const uid = s.metadata!.uid;
    // Far enough ahead (5-6 s) that a busy machine still admits the turn and asks the provider
    // before it passes; a 2 s deadline could pass first, and the turn would then write nothing.
    const deadline = BigInt(Math.floor(Date.now() / 1000) + 6);
    const err = await client.exec({ session: uid, inputs: ["slow"], deadlineUnix: deadline }).catch((e) => ConnectError.from(e));
    fake.next = () => ({ kind: "answer" });
    fake.releaseHeld();
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR"]);
    const error = rs[3]!.event!.body;
    expect(error.case === "error" && error.value.code).toBe(Code.DeadlineExceeded);
  });
});

describe("crash recovery (the server is killed mid-turn)", () => {
  it("fault: killed while the provider is answering, Resume calls the provider exactly once and completes", async () => {
    const s = await client.create({ harness: "chat" });
    const uid = s.metadata!.uid;
    fake.next = () => ({ kind: "hold" });
    const before = fake.requests.length;
    const turn = client.exec({ session: uid, inputs: ["survive"] }).catch((e) => e);
    await fake.waitForRequests(before + 1);
    fake.next = () => ({ kind: "answer" });
    await crashAndRestart(() => fake.releaseHeld());
    await turn;

    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL"]);
    const afterCrash = fake.requests.length;
    const resumed = await client.raw.resume({ session: uid });
    expect(fake.requests.length - afterCrash).toBe(1);
    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END", "LIFECYCLE"]);
    expect(resumed.lastSeq).toBe(6n);
    expect(new Set(rs.slice(0, 5).map((r) => r.event!.executionId)).size).toBe(1);
    const v = await audit.verify({ session: uid, replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, outputs: outputs(rs), modelCalls: 0n });
    // A second Resume has nothing to re-drive: one more marker, no provider call.
    await client.raw.resume({ session: uid });
    expect(fake.requests.length - afterCrash).toBe(1);
  });

  it("fault: killed after OUTPUT but before END, Resume makes zero provider calls", async () => {
    const s = await client.create({ harness: "hold" });
    const uid = s.metadata!.uid;
    const gate = `g-${uid}`;
    const config = new TextEncoder().encode(JSON.stringify({ hold_url: `${fake.url}/hold/${gate}` }));
    const before = fake.requests.length;
    const turn = client.exec({ session: uid, inputs: ["almost"], config }).catch((e) => e);
    await until("the harness to wait on its gate", () => fake.gateRequests(gate) === 1);
    expect(fake.requests.length - before).toBe(1);
    await crashAndRestart(() => fake.openGate(gate));
    await turn;

    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT"]);
    await client.raw.resume({ session: uid });
    expect(fake.requests.length - before).toBe(1);
    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END", "LIFECYCLE"]);
    expect((await audit.verify({ session: uid, replay: true })).chainOk).toBe(true);
  });

  it("fault: an inputless Exec on an interrupted session recovers it the same way, without a RESUME marker", async () => {
    const s = await client.create({ harness: "chat" });
    const uid = s.metadata!.uid;
    fake.next = () => ({ kind: "hold" });
    const before = fake.requests.length;
    const turn = client.exec({ session: uid, inputs: ["again"] }).catch((e) => e);
    await fake.waitForRequests(before + 1);
    fake.next = () => ({ kind: "answer" });
    await crashAndRestart(() => fake.releaseHeld());
    await turn;

    const recovered = await client.exec({ session: uid });
    expect(fake.requests.length - before).toBe(2);
    expect(kinds(recovered.records)).toEqual(["OUTPUT", "END"]);
    expect(recovered.records[0]!.event!.executionId).toBe((await records(uid))[0]!.event!.executionId);
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
  });
});
