/**
 * Input completeness through Resume and Replay (docs/behaviour.md §2.6, §2.4; checklist §8.10 #56-#58,
 * checklist §8.11 #61): an invocation whose inputs were only partly committed never reached its harness and is
 * not resumed; one with all its inputs (or a genuinely inputless one) is, once; a malformed count or
 * INPUT stops Resume, and stops Replay when the turn completed, but a malformed incomplete tail is
 * skipped by Replay; Replay never writes.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { textOf, userText } from "../../../proto/messages.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import type { ModelInvoker } from "../../../objects/controller/models.js";
import {
  descriptor,
  echoScript,
  fakeExecutor,
  liveTurn,
  modelHarness,
  newLog,
  outputTexts,
  reopenLog,
  scriptedModels,
  toolCall,
  toolDeps,
  replayLog as replay,
  resumeLog,
} from "../support/controller-fixture.js";

type Fx = ReturnType<typeof newLog>;

function counted(h: Harness, runs: { n: number; inputs: string[][] }): Harness {
  return { describe: h.describe, run: (start, sink) => (runs.n++, runs.inputs.push(start.inputs.map(textOf)), h.run(start, sink)) };
}
const newRuns = () => ({ n: 0, inputs: [] as string[][] });

const resume = (fx: Fx, h: Harness, models: ModelInvoker, ex?: ReturnType<typeof fakeExecutor>) =>
  resumeLog(fx, h, { models, tools: ex && toolDeps(ex.executor) });

function write(fx: Fx, ...events: Event[]): void {
  const r = fx.journal.append(events, { fence: 0n, mintFence: true });
  if (!r.ok) throw new Error(r.reason);
}
const marker = (id: string, inputCount?: bigint) =>
  create(EventSchema, {
    executionId: id,
    kind: EventKind.EVENT_EXECUTION_START,
    body: { case: "executionStart", value: { inputCount, harness: "h", harnessVersion: "1" } },
  });
const input = (id: string, text = "x") =>
  create(EventSchema, { executionId: id, kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText(text) } });
const payloadless = (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_INPUT });
const output = (id: string, text = "o") =>
  create(EventSchema, { executionId: id, kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: userText(text) } });
const end = (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } });

const records = (fx: Fx) => fx.journal.read(1n, 0n, 1_000_000);

/** One model call with the first input's text (or "inputless"), one tool call, then an output. */
const modelAndTool: Harness = {
  describe: () => descriptor("h"),
  async run(start, sink) {
    await sink.model({ model: "m", messages: [userText(start.inputs.length ? textOf(start.inputs[0]) : "inputless")] });
    await sink.toolCall(toolCall({ id: "c1", tool: "t", idempotencyKey: "k1" }));
    await sink.output("done");
  },
};

describe("input completeness (checklist §8.10)", () => {
  it("truncated snapshots: marker-only or partly committed inputs are not resumed; all inputs, or a genuinely inputless turn, resume once with the original inputs (one model call, one tool call) (checklist §8.10 #56)", async () => {
    const fx = newLog();
    await liveTurn(fx, modelAndTool, scriptedModels(echoScript), ["a", "b"], { tools: toolDeps(fakeExecutor().executor) });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
    const file = fx.db.raw.export();

    for (const cut of [1, 2]) {
      const snap = newLog(file);
      snap.truncateAfter(cut);
      const before = records(snap);
      const runs = newRuns();
      const models = scriptedModels(echoScript);
      const ex = fakeExecutor();
      const r = await resume(snap, counted(modelAndTool, runs), models, ex);
      expect(r, `cut after ${cut}`).toMatchObject({ kind: "invalid", incomplete: true });
      expect([runs.n, models.calls, ex.calls.length]).toEqual([0, 0, 0]);
      expect(records(snap)).toEqual(before);
    }

    const all = newLog(file);
    all.truncateAfter(3);
    const runs = newRuns();
    const models = scriptedModels(echoScript);
    const ex = fakeExecutor();
    expect(await resume(all, counted(modelAndTool, runs), models, ex)).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(runs.inputs).toEqual([["a", "b"]]);
    expect([models.calls, ex.calls.length]).toEqual([1, 1]);
    expect(outputTexts(all.events())).toEqual(["echo:a", "done"]);

    // A genuinely inputless turn cut right after its marker.
    const none = newLog();
    await liveTurn(none, modelAndTool, scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
    const snap = reopenLog(none);
    snap.truncateAfter(1);
    const runs0 = newRuns();
    const models0 = scriptedModels(echoScript);
    const ex0 = fakeExecutor();
    expect(await resume(snap, counted(modelAndTool, runs0), models0, ex0)).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(runs0.inputs).toEqual([[]]);
    expect([models0.calls, ex0.calls.length]).toEqual([1, 1]);
    expect(snap.kinds()).toEqual(["EXECUTION_START", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
  });

  // Malformed inputs of one execution "bad", as its marker and INPUT records.
  const malformed: [string, Event[]][] = [
    ["missing count, no inputs", [marker("bad")]],
    ["missing count, with an input", [marker("bad"), input("bad")]],
    ["negative count", [marker("bad", -1n)]],
    ["excess inputs", [marker("bad", 1n), input("bad"), input("bad")]],
    ["a payloadless INPUT", [marker("bad", 1n), payloadless("bad")]],
  ];

  it("Resume: a missing, negative or excess count or a payloadless INPUT is an invalid log; missing or partial inputs of an incomplete tail are an incomplete invocation; nothing runs or is written (checklist §8.10 #57)", async () => {
    const cases: [string, Event[], boolean][] = [
      ...malformed.map(([name, recs]) => [name, recs, false] as [string, Event[], boolean]),
      ["no inputs of two", [marker("bad", 2n)], true],
      ["one input of two", [marker("bad", 2n), input("bad")], true],
    ];
    for (const [name, recs, incomplete] of cases) {
      const fx = newLog();
      write(fx, ...recs);
      const before = records(fx);
      const runs = newRuns();
      const models = scriptedModels(echoScript);
      const r = await resume(fx, counted(modelHarness(), runs), models);
      expect(r, name).toMatchObject({ kind: "invalid", incomplete });
      expect(runs.n, name).toBe(0);
      expect(models.calls, name).toBe(0);
      expect(records(fx), name).toEqual(before);
    }
  });

  it("Replay: a malformed completed turn fails before the valid prefix runs; a malformed incomplete tail is skipped and the prefix runs once; Replay never writes (checklist §8.10 #57)", async () => {
    for (const [name, recs] of malformed) {
      const completed = newLog();
      await liveTurn(completed, modelHarness(), scriptedModels(echoScript), ["ok"]);
      write(completed, ...recs, output("bad"), end("bad"));
      const head = completed.journal.head();
      const runs = newRuns();
      const models = scriptedModels(echoScript);
      const r = await replay(completed, counted(modelHarness(), runs), models);
      expect(r.ok, name).toBe(false);
      expect(r.divergence, name).toMatch(/^invalid execution log/);
      expect(runs.n, name).toBe(0);
      expect(completed.journal.head(), name).toEqual(head);

      const tail = newLog();
      await liveTurn(tail, modelHarness(), scriptedModels(echoScript), ["ok"]);
      write(tail, ...recs);
      const head2 = tail.journal.head();
      const runs2 = newRuns();
      const r2 = await replay(tail, counted(modelHarness(), runs2), models);
      expect(r2, name).toMatchObject({ ok: true, outputs: ["echo:ok"], executions: 1, modelCalls: 0 });
      expect(runs2.n, name).toBe(1);
      expect(tail.journal.head(), name).toEqual(head2);
    }
  });

  it("a completed turn followed by a turn whose INPUT append failed: Replay runs only the completed turn and writes nothing (checklist §8.10 #58)", async () => {
    const fx = newLog();
    const runs = newRuns();
    const h = counted(modelHarness(), runs);
    await liveTurn(fx, h, scriptedModels(echoScript), ["first"]);
    // The second turn's INPUT is over the journal's event limit: its first append (marker and
    // inputs, one transaction) is refused whole, so the turn leaves no record at all.
    const refused = await liveTurn(fx, h, scriptedModels(echoScript), ["second", "x".repeat(2_000_000)]);
    expect(refused).toMatchObject({ kind: "refused", refusal: { reason: "too_large", index: 2 } });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    runs.n = 0;
    const head = fx.journal.head();
    expect(await replay(fx, h)).toMatchObject({ ok: true, outputs: ["echo:first"], executions: 1 });
    expect(runs.n).toBe(1);
    expect(fx.journal.head()).toEqual(head);

    // The journal Go's failed INPUT append leaves (a marker and part of the inputs), here from a
    // crash snapshot: Replay still runs only the completed turn.
    await liveTurn(fx, h, scriptedModels(echoScript), ["second", "third"]);
    const cut = reopenLog(fx);
    cut.truncateAfter(7);
    expect(cut.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END", "EXECUTION_START", "INPUT"]);
    runs.n = 0;
    const head2 = cut.journal.head();
    expect(await replay(cut, h)).toMatchObject({ ok: true, outputs: ["echo:first"], executions: 1 });
    expect(runs.n).toBe(1);
    expect(cut.journal.head()).toEqual(head2);
  });
});

describe("turn boundaries (checklist §8.11)", () => {
  it("an ID-bearing INPUT followed by an ID-less OUTPUT makes Replay (and Resume) fail as an invalid log; no harness runs (checklist §8.11 #61)", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(echoScript), ["ok"]);
    write(fx, marker("a", 1n), input("a"), create(EventSchema, { kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: userText("o") } }));
    const before = records(fx);
    const runs = newRuns();
    const models = scriptedModels(echoScript);
    const r = await replay(fx, counted(modelHarness(), runs), models);
    expect(r).toMatchObject({ ok: false, divergenceSeq: 8n });
    expect(r.divergence).toMatch(/^invalid execution log: record 8 \(EVENT_OUTPUT\) has no execution id/);
    expect(await resume(fx, counted(modelHarness(), runs), models)).toMatchObject({ kind: "invalid", incomplete: false });
    // Even when the turn it interrupts then ends.
    write(fx, end("a"));
    expect((await replay(fx, counted(modelHarness(), runs), models)).divergence).toMatch(/has no execution id/);
    expect(runs.n).toBe(0);
    expect(models.calls).toBe(0);
    expect(records(fx).slice(0, before.length)).toEqual(before);
  });
});
