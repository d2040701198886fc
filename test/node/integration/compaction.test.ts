/**
 * Bounded history (docs/history.md) against a real `wrangler dev` and a real HTTP stand-in model
 * provider: the chat harness with a small `max_history_tokens` compacts, later turns hand the
 * provider only the summary and what came after it, replay is exact with zero model calls, a
 * remote harness over the tunnel receives the compaction point, and a crash right after the
 * compaction's model call recovers without asking for the summary again (last: it kills the host).
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HarnessDescriptorSchema, Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { textOf, userText } from "../../../proto/messages.js";
import { COMPACTION_PROMPT, SUMMARY_PREFIX } from "../../../runtimes/builtin/chat.js";
import { compactedThrough } from "../../../runtimes/compaction.js";
import { compactionOf, serve, type Harness, type Serving } from "../../../sdk/harness/index.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeRequest } from "../support/fake-openai.js";
import { startHost, type Host } from "../support/host.js";

let fake: FakeOpenAi;
let host: Host;
let serving: Serving | undefined;

/** What the remote harness saw of each execution's history. */
const seen: { history: number; throughSeq?: bigint; summary?: string }[] = [];

const remote: Harness = {
  describe: () =>
    create(HarnessDescriptorSchema, { id: "remote-compacting", version: "1", models: ["m"], capabilities: { resumability: Resumability.STATELESS_REPLAY } }),
  async run(start, sink) {
    const point = compactionOf(start.history);
    seen.push({ history: start.history.length, throughSeq: point?.throughSeq, summary: point && textOf(point.summary) });
    if (textOf(start.inputs[0]) === "compact now") await sink.compact!({ model: "m", messages: [userText("summarize, please")] });
    await sink.model({ model: "m", messages: [userText(textOf(start.inputs[0]))] });
  },
};

beforeAll(async () => {
  fake = await startFakeOpenAi();
  host = await startHost({ vars: { MODEL_BASE_URL: fake.url, MODEL_DEFAULT: "stand-in-1" } });
  serving = serve({ url: host.url, name: "remote-compacting", harness: remote, backoff: { initialMs: 50, maxMs: 200 } });
  await serving.connected;
});

afterAll(async () => {
  await serving?.close();
  await host?.stop();
  await fake?.close();
});

const isCompaction = (r: FakeRequest) => r.body.messages?.at(-1)?.content === COMPACTION_PROMPT;
const contents = (r: FakeRequest) => (r.body.messages ?? []).map((m) => m.content ?? "");
const config = (o: object) => new TextEncoder().encode(JSON.stringify(o));

describe("bounded history through a real host", () => {
  it("chat: with max_history_tokens the session compacts; later requests carry only the summary and the tail; replay is exact with zero model calls", async () => {
    const cfg = config({ system_prompt: "be brief", max_history_tokens: 40 });
    const uid = (await host.client.create({ harness: "chat" })).metadata!.uid;
    const from = fake.requests.length;
    for (let i = 1; i <= 8; i++) await host.client.exec({ session: uid, inputs: [`turn ${i}: tell me something about the number ${i}`], config: cfg });
    const sent = fake.requests.slice(from);
    const compactions = sent.filter(isCompaction);
    expect(compactions.length).toBeGreaterThanOrEqual(2);

    const rs = await host.records(uid);
    const markers = rs.filter((r) => compactedThrough(r.event!) !== undefined);
    expect(markers).toHaveLength(compactions.length);
    // After the first compaction, no answer request carries turn 1, and each starts with the summary.
    const firstCompaction = sent.indexOf(compactions[0]!);
    for (const r of sent.slice(firstCompaction + 1).filter((x) => !isCompaction(x))) {
      expect(contents(r)[0]).toBe("be brief");
      expect(contents(r)[1]!.startsWith(SUMMARY_PREFIX)).toBe(true);
      expect(contents(r).some((c) => c.includes("turn 1:"))).toBe(false);
    }
    // The last request: system, the latest summary, the tail since it, this turn's input.
    const last = sent.at(-1)!;
    expect(contents(last).at(-1)).toBe("turn 8: tell me something about the number 8");
    expect(contents(last).length).toBeLessThan(2 * 8);

    const asked = fake.requests.length;
    const v = await host.client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n, divergence: "" });
    expect(fake.requests.length).toBe(asked);
    expect(await host.records(uid)).toEqual(rs);
  });

  it("tunnel: a remote harness's compaction is journaled, and its next execution receives the compaction point", async () => {
    seen.length = 0;
    const uid = (await host.client.create({ harness: "remote-compacting" })).metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["first"] });
    const compacting = await host.client.exec({ session: uid, inputs: ["compact now"] });
    await host.client.exec({ session: uid, inputs: ["after"] });
    const kinds = await host.kinds(uid);
    expect(kinds.slice(5, 13)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "LIFECYCLE", "MODEL_CALL", "OUTPUT", "END"]);
    expect(seen).toHaveLength(3);
    expect(seen[2]).toMatchObject({ throughSeq: 5n, summary: compacting.outputs[0] });
    // summary, marker, then the compacting execution's records but its summary and marker.
    expect(seen[2]!.history).toBe(8);
    expect(await host.client.verify(uid, { replay: true })).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n });
  });

  it("fault: killed after the compaction's summary, Resume makes one model call (the answer), not a second compaction", async () => {
    const cfg = config({ max_history_tokens: 5 });
    const uid = (await host.client.create({ harness: "chat" })).metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["a first turn that passes the tiny budget"], config: cfg });
    fake.next = (req) => (isCompaction(req) ? { kind: "answer" } : { kind: "hold" });
    const before = fake.requests.length;
    const turn = host.client.exec({ session: uid, inputs: ["second"], config: cfg }).catch((e) => e);
    await fake.waitForRequests(before + 2);
    fake.next = () => ({ kind: "answer" });
    await host.kill();
    fake.releaseHeld();
    await host.restart();
    await turn;
    expect((await host.kinds(uid)).slice(5)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "LIFECYCLE", "MODEL_CALL"]);

    const afterCrash = fake.requests.length;
    await host.client.raw.resume({ session: uid });
    const resumed = fake.requests.slice(afterCrash);
    expect(resumed).toHaveLength(1);
    expect(isCompaction(resumed[0]!)).toBe(false);
    expect(contents(resumed[0]!)[0]!.startsWith(SUMMARY_PREFIX)).toBe(true);
    expect((await host.kinds(uid)).slice(5)).toEqual([
      "EXECUTION_START",
      "INPUT",
      "MODEL_CALL",
      "OUTPUT",
      "LIFECYCLE",
      "MODEL_CALL",
      "OUTPUT",
      "END",
      "LIFECYCLE",
    ]);
    expect(await host.client.verify(uid, { replay: true })).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n });
  });
});
