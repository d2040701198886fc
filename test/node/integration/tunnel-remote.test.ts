/**
 * checklist §8.2 (a harness out of process, over the tunnel) against a real `wrangler dev`, a
 * stand-in model provider that answers differently every time and a stand-in tool executor that
 * counts effects: a remote failure ends the turn with ERROR carrying its text; replay reproduces a
 * nondeterministic answer with zero model calls; a host-executed call runs exactly once and replay
 * does not run it again.
 */
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventKind, HarnessDescriptorSchema, Mediation, Resumability, ToolCallSchema, textOf, userText, type LogRecord } from "../../../sdk/index.js";
import { SessionsClient } from "../../../sdk/client.js";
import { serve, type Harness, type Serving } from "../../../sdk/harness/index.js";
import { startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";

let server: DevServer;
let client: SessionsClient;
let model: FakeOpenAi;
let executor: FakeExecutor;
const serving: Serving[] = [];

const stateless = (id: string, models: string[] = []) =>
  create(HarnessDescriptorSchema, { id, version: "1", models, capabilities: { resumability: Resumability.STATELESS_REPLAY, forkSafe: true } });

const failing: Harness = {
  describe: () => stateless("remote-fails"),
  async run() {
    throw new Error("the remote harness broke: disk full");
  },
};

const modelled: Harness = {
  describe: () => stateless("remote-model", ["m"]),
  async run(start, sink) {
    await sink.model({ model: "m", messages: [userText(textOf(start.inputs[0]))] });
  },
};

const toolUser: Harness = {
  describe: () => stateless("remote-tools"),
  async run(start, sink) {
    const call = create(ToolCallSchema, {
      id: "c1",
      tool: "lookup",
      args: { q: textOf(start.inputs[0]) },
      mediation: Mediation.CONTROLLER_MEDIATED,
      idempotencyKey: `${start.executionId}/c1`,
    });
    const result = await sink.toolCall(call);
    await sink.output(`looked up: ${JSON.stringify(result.output)}`);
  },
};

beforeAll(async () => {
  model = await startFakeOpenAi();
  executor = await startFakeExecutor();
  server = await startDevServer({ vars: { MODEL_BASE_URL: model.url, MODEL_DEFAULT: "m", TOOL_EXECUTOR_URL: executor.url } });
  client = new SessionsClient({ server: server.url });
  for (const [name, harness] of [
    ["remote-fails", failing],
    ["remote-model", modelled],
    ["remote-tools", toolUser],
  ] as const) {
    const s = serve({ url: server.url, name, harness, backoff: { initialMs: 50, maxMs: 200 } });
    serving.push(s);
    await s.connected;
  }
});

afterAll(async () => {
  await Promise.all(serving.map((s) => s.close()));
  await server?.dispose();
  await executor?.close();
  await model?.close();
});

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}
const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));

describe("BEHAVIOUR checklist §8.2: a harness out of process", () => {
  it("a remote Run failure: Exec's error carries its text, the last event is ERROR (no END), the chain verifies (checklist §8.2 #15)", async () => {
    const uid = (await client.create({ harness: "remote-fails" })).metadata!.uid;
    const err = await client.exec({ session: uid, inputs: ["go"] }).catch((e) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).rawMessage).toContain("the remote harness broke: disk full");
    const rs = await records(uid);
    expect(kinds(rs).at(-1)).toBe("ERROR");
    expect(kinds(rs)).not.toContain("END");
    expect(await client.verify(uid)).toMatchObject({ chainOk: true });
  });

  it("a nondeterministic model behind a remote harness: replay reproduces the output with zero model calls (checklist §8.2 #16)", async () => {
    const uid = (await client.create({ harness: "remote-model" })).metadata!.uid;
    const turn = await client.exec({ session: uid, inputs: ["hi"] });
    const asked = model.requests.length;
    expect(turn.outputs).toHaveLength(1);
    expect(turn.outputs[0]).toMatch(/^answer #\d+: hi$/);
    const replayed = await client.verify(uid, { replay: true });
    expect(replayed).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n, outputs: turn.outputs });
    expect(model.requests.length).toBe(asked);
    // Asked again live, the provider answers differently: the replay really came from the journal.
    const again = await client.exec({ session: uid, inputs: ["hi"] });
    expect(again.outputs[0]).not.toBe(turn.outputs[0]);
  });

  it("a remote CONTROLLER_MEDIATED call runs once (one TOOL_CALL, one TOOL_RESULT); replay does not run it again (checklist §8.2 #17)", async () => {
    const uid = (await client.create({ harness: "remote-tools" })).metadata!.uid;
    const turn = await client.exec({ session: uid, inputs: ["weather"] });
    const rs = await records(uid);
    expect(kinds(rs).filter((k) => k === "TOOL_CALL")).toHaveLength(1);
    expect(kinds(rs).filter((k) => k === "TOOL_RESULT")).toHaveLength(1);
    const key = rs.find((r) => r.event!.kind === EventKind.EVENT_TOOL_CALL)!.event!.body.value as { idempotencyKey: string };
    expect(executor.effects.get(`${uid}/${key.idempotencyKey}`)).toBe(1);
    const sent = executor.requests.length;
    expect(turn.outputs).toHaveLength(1);

    expect(await client.verify(uid, { replay: true })).toMatchObject({ chainOk: true, replayOk: true, outputs: turn.outputs });
    expect(executor.requests.length).toBe(sent);
    expect(executor.effects.get(`${uid}/${key.idempotencyKey}`)).toBe(1);
  });
});
