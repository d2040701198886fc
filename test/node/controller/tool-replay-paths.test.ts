/**
 * Tool calls on every recorded path, and harness identity on recovery and replay (docs/behaviour.md
 * §2.4-2.5, §2.7; checklist §8.12 #63, #67, #73, #78, checklist §8.13 #82, #85): a changed call identity
 * diverges on replay, on a resume with the receipt recorded and on a resume at the intent; a
 * swallowed divergence stays a divergence; a resume's live tail hands the executor the caller's
 * arguments after the intent is durable; a re-driven intent's failure is the harness's to handle;
 * Resume acts on the last execution first seen; recorded identity is checked exactly.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, Mediation, ToolResultSchema, type ToolCall } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { textOf, userText } from "../../../proto/messages.js";
import type { Harness, HarnessStart } from "../../../runtimes/harness-spi.js";
import { ReplayDivergedError, ToolExecutionError } from "../../../objects/controller/errors.js";
import { errorEvent } from "../../../objects/controller/events.js";
import type { DescribeHarness } from "../../../objects/controller/identity.js";
import { replayJournal } from "../../../objects/controller/replay.js";
import { resumeLatest } from "../../../objects/controller/resume.js";
import {
  describer,
  descriptor,
  echoScript,
  failingScript,
  fakeExecutor,
  liveTurn,
  modelHarness,
  newLog,
  outputTexts,
  scriptedModels,
  toolCall,
  toolDeps,
  toolHarness,
} from "../support/controller-fixture.js";

const uid = "sess-000000000000000000000001";

function resume(
  fx: ReturnType<typeof newLog>,
  h: Harness | Record<string, Harness>,
  ex = fakeExecutor(),
  models = scriptedModels(echoScript),
  describe?: DescribeHarness,
) {
  return resumeLatest(fx.events(), {
    sessionUid: uid,
    log: fx.log,
    mintFence: () => fx.journal.mintFence(),
    describe: describe ?? describer("run" in h ? { h: h as Harness } : h),
    defaultHarness: "h",
    models,
    observe: () => undefined,
    signal: new AbortController().signal,
    tools: toolDeps(ex.executor),
  });
}

function replay(fx: ReturnType<typeof newLog>, h: Harness | Record<string, Harness>, models = scriptedModels(echoScript), describe?: DescribeHarness) {
  return replayJournal(fx.events(), { sessionUid: uid, describe: describe ?? describer("run" in h ? { h: h as Harness } : h), defaultHarness: "h", models });
}

/** A describer that counts Describe calls per name. */
function counting(harnesses: Record<string, Harness>) {
  const calls: string[] = [];
  const inner = describer(harnesses);
  const describe: DescribeHarness = (name) => {
    calls.push(name);
    return inner(name);
  };
  return { describe, calls };
}

describe("a changed call identity (checklist §8.12 #63)", () => {
  const original = toolCall({ id: "c1", tool: "pay", idempotencyKey: "k1", args: { to: { acct: "a", tags: ["x", "y"] }, amount: 5 } });
  const changes: [string, ToolCall][] = [
    ["id", toolCall({ ...original, id: "c2" })],
    ["tool name", toolCall({ ...original, tool: "refund" })],
    ["args", toolCall({ ...original, args: { to: { acct: "a", tags: ["x", "y"] }, amount: 6 } })],
    ["nested args", toolCall({ ...original, args: { to: { acct: "b", tags: ["x", "y"] }, amount: 5 } })],
    ["list order", toolCall({ ...original, args: { to: { acct: "a", tags: ["y", "x"] }, amount: 5 } })],
    ["key", toolCall({ ...original, idempotencyKey: "k2" })],
    ["mediation", toolCall({ ...original, mediation: Mediation.REQUIRES_APPROVAL })],
  ];
  for (const [what, changed] of changes) {
    it(`replay, resume with result, resume at intent: a changed ${what} diverges; no executor call, no served result, no model call (checklist §8.12 #63)`, async () => {
      const fx = newLog();
      const live = fakeExecutor();
      expect(await liveTurn(fx, toolHarness([original]), scriptedModels(echoScript), [], { tools: toolDeps(live.executor) })).toEqual({ kind: "completed" });
      expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
      const models = scriptedModels(echoScript);
      expect(await replay(fx, toolHarness([original]), models)).toMatchObject({ ok: true });
      const r = await replay(fx, toolHarness([changed]), models);
      expect(r).toMatchObject({ ok: false, divergenceSeq: 2n, modelCalls: 0 });
      expect(r.divergence).toMatch(/tool call mismatch/);

      for (const cut of [3, 2]) {
        fx.truncateAfter(cut);
        const before = fx.kinds();
        const ex = fakeExecutor();
        const served: unknown[] = [];
        const probe: Harness = {
          describe: () => descriptor("h"),
          async run(_s, sink) {
            served.push(await sink.toolCall(changed));
          },
        };
        const out = await resume(fx, probe, ex, models);
        expect(out, `cut after ${cut}`).toMatchObject({
          kind: "redriven",
          outcome: { kind: "failed", code: Code.FailedPrecondition, message: expect.stringMatching(/tool call mismatch/) },
        });
        expect(served).toEqual([]);
        expect(ex.calls).toHaveLength(0);
        expect(fx.kinds()).toEqual([...before, "ERROR"]);
      }
      expect(models.calls).toBe(0);
      expect(live.calls).toHaveLength(1);
    });
  }
});

/** Issues a wrong call first (swallowing what it gets), then every effect the live run made, and more. */
function swallowingHarness(wrong: (sink: Parameters<Harness["run"]>[1]) => Promise<unknown>, seen: unknown[]): Harness {
  const attempt = async (f: () => Promise<unknown>) => {
    try {
      seen.push(await f());
    } catch (e) {
      seen.push(e);
    }
  };
  return {
    describe: () => descriptor("h"),
    async run(_s, sink) {
      await attempt(() => wrong(sink));
      await attempt(() => sink.model({ model: "m", messages: [userText("hi")] }));
      await attempt(() => sink.toolCall(toolCall({ id: "c1", idempotencyKey: "k1" })));
      await attempt(() => sink.toolCall(toolCall({ id: "c2", idempotencyKey: "k2" })));
      await attempt(() => sink.output("carry on"));
      await attempt(() => sink.report(create(ToolResultSchema, { id: "r1" })));
    },
  };
}

describe("a swallowed divergence (checklist §8.12 #67)", () => {
  const liveHarness: Harness = {
    describe: () => descriptor("h"),
    async run(_s, sink) {
      await sink.model({ model: "m", messages: [userText("hi")] });
      await sink.toolCall(toolCall({ id: "c1", idempotencyKey: "k1" }));
    },
  };
  const wrongs: [string, (sink: Parameters<Harness["run"]>[1]) => Promise<unknown>][] = [
    ["model request", (sink) => sink.model({ model: "m", messages: [userText("different")] })],
    ["tool call", (sink) => sink.toolCall(toolCall({ id: "c1", idempotencyKey: "k1", args: { changed: true } }))],
  ];
  for (const [name, wrong] of wrongs) {
    it(`resume, replay: a harness that swallows a ${name} divergence and keeps emitting effects still fails diverged; no executor or model call; Resume appends only ERROR (checklist §8.12 #67)`, async () => {
      const fx = newLog();
      await liveTurn(fx, liveHarness, scriptedModels(echoScript), ["hi"], { tools: toolDeps(fakeExecutor().executor) });
      expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT", "END"]);

      const models = scriptedModels(echoScript);
      const seen: unknown[] = [];
      const r = await replay(fx, swallowingHarness(wrong, seen), models);
      expect(r).toMatchObject({ ok: false, modelCalls: 0 });
      expect(r.divergence).toMatch(/^replay diverged/);
      expect(seen[0]).toBeInstanceOf(ReplayDivergedError);
      for (const later of seen.slice(1)) expect(later).toBe(seen[0]);

      fx.truncateAfter(6); // the crash lost only END: the whole prefix is recorded
      const ex = fakeExecutor();
      const seen2: unknown[] = [];
      const out = await resume(fx, swallowingHarness(wrong, seen2), ex, models);
      expect(out).toMatchObject({
        kind: "redriven",
        outcome: { kind: "failed", code: Code.FailedPrecondition, message: expect.stringMatching(/^replay diverged/) },
      });
      expect(seen2[0]).toBeInstanceOf(ReplayDivergedError);
      for (const later of seen2.slice(1)) expect(later).toBe(seen2[0]);
      expect(ex.calls).toHaveLength(0);
      expect(models.calls).toBe(0);
      expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT", "ERROR"]);
    });
  }
});

describe("the executor on a resume live tail (checklist §8.12 #73)", () => {
  it("resume: the live tail's executor receives the caller's original arguments, and the intent is durable when it runs (checklist §8.12 #73)", async () => {
    const args = { amount: 12.5, n: 3, to: { acct: "a", tags: ["x", null, true] }, none: null, list: [[1], { b: "c" }] };
    const tail = (a: typeof args): Harness => ({
      describe: () => descriptor("h"),
      async run(_s, sink) {
        await sink.model({ model: "m", messages: [userText("hello")] });
        await sink.toolCall(toolCall({ id: "c1", idempotencyKey: "k1", args: a }));
      },
    });
    const fx = newLog();
    await liveTurn(fx, tail(args), scriptedModels(echoScript), ["hello"], { tools: toolDeps(fakeExecutor().executor) });
    fx.truncateAfter(4); // cut before the tool call: it is the resume's live tail
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT"]);
    let journaled: string[] = [];
    const ex = fakeExecutor(() => {
      journaled = fx.kinds();
      return create(ToolResultSchema, { output: { ok: true } });
    });
    const out = await resume(fx, tail(structuredClone(args)), ex);
    expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(journaled).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL"]);
    expect(ex.calls).toHaveLength(1);
    expect(ex.calls[0]).toMatchObject({ sessionUid: uid, call: { id: "c1", idempotencyKey: "k1" } });
    expect(ex.calls[0]!.call.args).toStrictEqual(args);
    const intent = fx.events()[4]!.event.body;
    expect(intent.case === "tool" && intent.value.args).toStrictEqual(args);
  });
});

describe("a re-driven intent's failure (checklist §8.12 #78)", () => {
  const failures: [string, () => Error][] = [
    ["an executor error", () => new ToolExecutionError("executor answered HTTP 502")],
    ["a divergence error from the executor", () => new ReplayDivergedError(0n, "the executor's own replay check")],
  ];
  for (const [name, failure] of failures) {
    it(`resume: ${name} on a re-driven intent reaches the harness as a live outcome; Resume completes; a later replay does not retry the executor (checklist §8.12 #78)`, async () => {
      const fx = newLog();
      const call = toolCall({ id: "c1", idempotencyKey: "k1" });
      await liveTurn(fx, toolHarness([call]), scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
      fx.truncateAfter(2); // [START, TOOL_CALL]: the receipt was lost
      const err = failure();
      const ex = fakeExecutor(() => err);
      const seen: unknown[] = [];
      const handling: Harness = {
        describe: () => descriptor("h"),
        async run(_s, sink) {
          try {
            await sink.toolCall(call);
          } catch (e) {
            seen.push(e);
          }
          await sink.output("handled");
        },
      };
      const out = await resume(fx, handling, ex);
      expect(seen).toEqual([err]);
      expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
      expect(ex.calls).toHaveLength(1);
      expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "OUTPUT", "END"]);
      expect(outputTexts(fx.events())).toEqual(["handled"]);
      const models = scriptedModels(echoScript);
      expect(await replay(fx, handling, models)).toMatchObject({ ok: true, outputs: ["handled"], modelCalls: 0 });
      expect(ex.calls).toHaveLength(1);
    });
  }
});

describe("the execution Resume acts on (checklist §8.13 #82)", () => {
  it("resume: the last first-seen pending execution's Start values are used even when later records of older executions follow; they are copies; the prefix is unchanged (checklist §8.13 #82)", async () => {
    const fx = newLog();
    const seen: HarnessStart[] = [];
    const probe: Harness = {
      describe: () => descriptor("h"),
      async run(start, sink) {
        seen.push(start);
        await sink.model({ model: "m", messages: [userText(textOf(start.inputs[start.inputs.length - 1]))] });
        // Mutate what it was handed: the journal must not change.
        start.config.fill(7);
        start.inputs.length = 0;
      },
    };
    // Execution A is cut (provider failure), B starts and is cut too, then a late record of A lands.
    await liveTurn(fx, probe, scriptedModels(failingScript(1)), ["a"], { executionId: "exec-a", config: new Uint8Array([1, 2]), cursor: 5n });
    await liveTurn(fx, probe, scriptedModels(failingScript(1)), ["b1", "b2"], { executionId: "exec-b", config: new Uint8Array([3, 4, 5]), cursor: 9n });
    const late = fx.log.append([errorEvent("exec-a", Code.Internal, "late record of A")], { fence: 0n, mintFence: true });
    expect(late.ok).toBe(true);
    const prefix = fx.events().map((e) => toBinary(EventSchema, e.event));
    seen.length = 0;
    const models = scriptedModels(echoScript);
    const out = await resume(fx, probe, fakeExecutor(), models);
    expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.executionId).toBe("exec-b");
    expect(seen[0]!.resumeFromSeq).toBe(9n);
    expect(
      fx
        .events()
        .slice(0, prefix.length)
        .map((e) => toBinary(EventSchema, e.event)),
    ).toEqual(prefix);
    const startB = fx.events().find((e) => e.event.executionId === "exec-b" && e.event.kind === EventKind.EVENT_EXECUTION_START)!.event.body;
    expect(startB.case === "executionStart" && [...startB.value.config]).toEqual([3, 4, 5]);
    expect(outputTexts(fx.events())).toEqual(["echo:b2"]);
    expect(fx.events().at(-1)!.event).toMatchObject({ executionId: "exec-b", kind: EventKind.EVENT_END });
  });
});

describe("recorded harness identity (checklist §8.13 #85)", () => {
  it("resume, replay: an empty served version fails against a recorded one; an empty recorded version passes; nothing runs or is appended on a mismatch (checklist §8.13 #85)", async () => {
    for (const path of ["resume", "replay"] as const) {
      const fx = newLog();
      await liveTurn(fx, modelHarness("h", "1"), scriptedModels(path === "resume" ? failingScript(1) : echoScript), ["hi"]);
      const before = fx.kinds();
      let ran = 0;
      const emptyVersion: Harness = { describe: () => descriptor("h", ""), run: async (s, sink) => void (ran++, await modelHarness().run(s, sink)) };
      const models = scriptedModels(echoScript);
      if (path === "resume")
        expect(await resume(fx, emptyVersion, fakeExecutor(), models)).toMatchObject({
          kind: "mismatch",
          detail: expect.stringMatching(/version "1".*version ""/),
        });
      else expect(await replay(fx, emptyVersion, models)).toMatchObject({ ok: false, divergence: expect.stringMatching(/version "1".*version ""/) });
      expect(ran).toBe(0);
      expect(models.calls).toBe(0);
      expect(fx.kinds()).toEqual(before);
    }
    // A marker that recorded no version is not version-checked.
    const fx = newLog();
    await liveTurn(fx, modelHarness("h", ""), scriptedModels(failingScript(1)), ["hi"]);
    const startEv = fx.events()[0]!.event.body;
    expect(startEv.case === "executionStart" && startEv.value.harnessVersion).toBe("");
    expect(await resume(fx, modelHarness("h", "9"), fakeExecutor(), scriptedModels(echoScript))).toMatchObject({
      kind: "redriven",
      outcome: { kind: "completed" },
    });
    expect(await replay(fx, modelHarness("h", "9"))).toMatchObject({ ok: true });
  });

  it("resume, replay: the recorded registry alias names the harness whatever its descriptor id; the alias does not override the version (checklist §8.13 #85)", async () => {
    const fx = newLog();
    // Live: registered as "alias", describing itself as "desc-id".
    await liveTurn(fx, modelHarness("desc-id", "1"), scriptedModels(failingScript(1)), ["hi"], { name: "alias" });
    const startEv = fx.events()[0]!.event.body;
    expect(startEv.case === "executionStart" && [startEv.value.harness, startEv.value.harnessVersion]).toEqual(["alias", "1"]);
    const before = fx.kinds();

    // Served under its descriptor id only: the alias is what the marker names, so it is not served.
    const byId = counting({ "desc-id": modelHarness("desc-id", "1") });
    expect(await resume(fx, {}, fakeExecutor(), scriptedModels(echoScript), byId.describe)).toMatchObject({
      kind: "mismatch",
      detail: expect.stringMatching(/"alias".*does not serve/),
    });
    expect(byId.calls).toEqual(["alias"]);
    // The alias, now describing another id but the recorded version "2": the version still decides.
    const otherVersion = counting({ alias: modelHarness("another-id", "2") });
    expect(await resume(fx, {}, fakeExecutor(), scriptedModels(echoScript), otherVersion.describe)).toMatchObject({
      kind: "mismatch",
      detail: expect.stringMatching(/version "1".*version "2"/),
    });
    expect(fx.kinds()).toEqual(before);
    // The alias with the recorded version, whatever id it describes: recovery runs, described once.
    const ok = counting({ alias: modelHarness("another-id", "1") });
    expect(await resume(fx, {}, fakeExecutor(), scriptedModels(echoScript), ok.describe)).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(ok.calls).toEqual(["alias"]);
    const rep = counting({ alias: modelHarness("another-id", "1") });
    expect(await replay(fx, {}, scriptedModels(echoScript), rep.describe)).toMatchObject({ ok: true });
    expect(rep.calls).toEqual(["alias"]);
    const repBad = counting({ alias: modelHarness("desc-id", "2") });
    expect(await replay(fx, {}, scriptedModels(echoScript), repBad.describe)).toMatchObject({
      ok: false,
      divergence: expect.stringMatching(/version "1".*version "2"/),
    });
  });
});
