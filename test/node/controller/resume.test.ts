/**
 * Controller recovery (docs/behaviour.md §2.5, checklist §8.1 #3, checklist §8.8 #40-47, checklist §8.9 #52, checklist §8.13 #85-87):
 * a lost END costs no model call; a cut model call is re-driven exactly once, and a harness retry
 * after a failed re-drive is a new call of its own (#43); a different request diverges without a
 * provider call; malformed or incomplete journals are refused untouched.
 */
import { describe, expect, it } from "vitest";
import { textOf, userText } from "../../../proto/messages.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import { replayJournal } from "../../../objects/controller/replay.js";
import { resumeLatest, type ResumeOptions } from "../../../objects/controller/resume.js";
import type { ModelInvoker } from "../../../objects/controller/models.js";
import {
  describer,
  descriptor,
  echoScript,
  failingScript,
  liveTurn,
  modelHarness,
  newLog,
  outputTexts,
  scriptedModels,
} from "../support/controller-fixture.js";

const uid = "sess-000000000000000000000001";

function resume(fx: ReturnType<typeof newLog>, harnesses: Record<string, Harness>, models: ModelInvoker, extra: Partial<ResumeOptions> = {}) {
  return resumeLatest(fx.events(), {
    sessionUid: uid,
    log: fx.log,
    mintFence: () => fx.journal.mintFence(),
    describe: describer(harnesses),
    defaultHarness: "h",
    models,
    observe: () => undefined,
    signal: new AbortController().signal,
    ...extra,
  });
}

describe("resumeLatest", () => {
  it("resume: a completed or empty journal is a no-op that neither describes nor runs the harness", async () => {
    const fx = newLog();
    let described = 0;
    const h: Harness = { describe: () => (described++, descriptor("h")), run: async () => undefined };
    expect(await resume(fx, { h }, scriptedModels(echoScript))).toEqual({ kind: "noop" });
    await liveTurn(fx, modelHarness(), scriptedModels(echoScript), ["hi"]);
    described = 0;
    expect(await resume(fx, { h }, scriptedModels(echoScript))).toEqual({ kind: "noop" });
    expect(described).toBe(0);
  });

  it("resume: when a crash lost only END, recovery appends END with zero model calls", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(echoScript), ["hi"]);
    fx.truncateAfter(4);
    const models = scriptedModels(echoScript);
    const r = await resume(fx, { h: modelHarness() }, models);
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(models.calls).toBe(0);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    expect(outputTexts(fx.events())).toEqual(["echo:hi"]);
    expect(new Set(fx.events().map((e) => e.event.executionId)).size).toBe(1);
    expect(fx.journal.verify().ok).toBe(true);
  });

  it("resume: a provider error after MODEL_CALL is re-driven with exactly one call; replay then needs none", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(failingScript(1)), ["hi"]);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR"]);
    const models = scriptedModels(echoScript);
    const r = await resume(fx, { h: modelHarness() }, models);
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(models.calls).toBe(1);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR", "OUTPUT", "END"]);
    const replayModels = scriptedModels(echoScript);
    const rep = await replayJournal(fx.events(), { sessionUid: uid, describe: describer({ h: modelHarness() }), defaultHarness: "h", models: replayModels });
    expect(rep).toMatchObject({ ok: true, outputs: ["echo:hi"], modelCalls: 0 });
  });

  it("resume: a hard crash inside the provider call is re-driven once", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(echoScript), ["hi"]);
    fx.truncateAfter(3);
    const models = scriptedModels(echoScript);
    await resume(fx, { h: modelHarness() }, models);
    expect(models.calls).toBe(1);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
  });

  it("resume: two failing re-drives each cost one call and leave an ERROR; the third succeeds", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(failingScript(1)), ["hi"]);
    const models = scriptedModels(failingScript(2));
    for (let i = 0; i < 3; i++) await resume(fx, { h: modelHarness() }, models);
    expect(models.calls).toBe(3);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR", "ERROR", "ERROR", "OUTPUT", "END"]);
    expect(fx.events().filter((e) => e.event.kind === 3)).toHaveLength(1);
  });

  it("resume: a harness that retries inside the same Run after a failed re-drive records a new MODEL_CALL and its OUTPUT; replay needs no call (checklist §8.8 #43)", async () => {
    // Retries a failed model call once, with the same request: the retry is a new live call.
    const retrying: Harness = {
      describe: () => descriptor("h"),
      async run(start, sink) {
        const req = { model: "m", messages: [userText(textOf(start.inputs[0]))] };
        await sink.model(req).catch(() => sink.model(req));
      },
    };
    const fx = newLog();
    await liveTurn(fx, retrying, scriptedModels(echoScript), ["hi"]);
    fx.truncateAfter(3); // the crash lost the answer: [START, INPUT, MODEL_CALL]
    const models = scriptedModels(failingScript(1));
    const r = await resume(fx, { h: retrying }, models);
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(models.calls).toBe(2); // the failed re-drive, then the retry
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "MODEL_CALL", "OUTPUT", "END"]);
    // No MODEL_CALL has two OUTPUTs: the cut call stays unanswered, the retry has its own id and answer.
    const calls = fx.events().filter((e) => e.event.body.case === "model");
    const ids = calls.map((e) => (e.event.body.case === "model" ? e.event.body.value.id : ""));
    expect(new Set(ids).size).toBe(2);
    expect(outputTexts(fx.events())).toEqual(["echo:hi"]);
    const replayModels = scriptedModels(echoScript);
    const rep = await replayJournal(fx.events(), { sessionUid: uid, describe: describer({ h: retrying }), defaultHarness: "h", models: replayModels });
    expect(rep).toMatchObject({ ok: true, outputs: ["echo:hi"], modelCalls: 0 });
    expect(replayModels.calls).toBe(0);
  });

  it("resume: a different model request diverges with zero provider calls and an ERROR; a matching one then recovers", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(failingScript(1)), ["hi"]);
    const changed: Harness = {
      describe: () => descriptor("h"),
      run: async (_s, sink) => void (await sink.model({ model: "m", messages: [userText("other")] })),
    };
    const models = scriptedModels(echoScript);
    const r = await resume(fx, { h: changed }, models);
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "failed" } });
    expect(models.calls).toBe(0);
    expect(fx.kinds().slice(-1)).toEqual(["ERROR"]);
    await resume(fx, { h: modelHarness() }, models);
    expect(models.calls).toBe(1);
    expect(fx.kinds().slice(-2)).toEqual(["OUTPUT", "END"]);
  });

  it("resume: an unanswered MODEL_CALL followed by usage is not a crash point (no provider call)", async () => {
    const fx = newLog();
    const handles: Harness = {
      describe: () => descriptor("h"),
      async run(_s, sink) {
        await sink.model({ model: "m", messages: [userText("x")] }).catch(() => undefined);
        await sink.usage({ model: "m", inputTokens: 3n, outputTokens: 0n, reasoningTokens: 0n } as never);
      },
    };
    await liveTurn(fx, handles, scriptedModels(failingScript(1)), ["x"]);
    fx.truncateAfter(4);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "USAGE"]);
    const models = scriptedModels(echoScript);
    const r = await resume(fx, { h: handles }, models);
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(models.calls).toBe(0);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "USAGE", "END"]);
  });

  it("resume: a lost END after OUTPUT and USAGE costs no model call, keeps the one USAGE with its values, and replays (checklist §8.1 #5)", async () => {
    const fx = newLog();
    const usage = { model: "m", inputTokens: 11n, outputTokens: 7n, reasoningTokens: 2n };
    const reports = modelHarness("h", "1", (sink) => sink.usage(usage as never));
    await liveTurn(fx, reports, scriptedModels(echoScript), ["hi"]);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "USAGE", "END"]);
    fx.truncateAfter(5);
    const models = scriptedModels(echoScript);
    const r = await resume(fx, { h: reports }, models);
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(models.calls).toBe(0);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "USAGE", "END"]);
    const usages = fx.events().filter((e) => e.event.body.case === "usage");
    expect(usages).toHaveLength(1);
    expect(usages[0]!.event.body.value).toMatchObject(usage);
    expect(outputTexts(fx.events())).toEqual(["echo:hi"]);
    // A later replay serves everything from the journal.
    const again = scriptedModels(echoScript);
    const rep = await replayJournal(fx.events(), { sessionUid: uid, describe: describer({ h: reports }), defaultHarness: "h", models: again });
    expect(rep).toMatchObject({ ok: true, outputs: ["echo:hi"], modelCalls: 0 });
    expect(again.calls).toBe(0);
  });

  it("resume: a recorded prefix the harness does not consume is a divergence and gets no END", async () => {
    const fx = newLog();
    await liveTurn(
      fx,
      modelHarness("h", "1", async (sink) => sink.output("more")),
      scriptedModels(echoScript),
      ["hi"],
    );
    fx.truncateAfter(5);
    const r = await resume(fx, { h: modelHarness() }, scriptedModels(echoScript));
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "failed" } });
    expect(fx.kinds()).not.toContain("END");
  });

  it("resume: Start values come from the journal, not the caller", async () => {
    const fx = newLog();
    const config = new Uint8Array([0, 255, 32, 10, 9]);
    let seen: { config: Uint8Array; cursor: bigint; id: string; inputs: number } | undefined;
    const probe: Harness = {
      describe: () => descriptor("h"),
      async run(start, sink) {
        seen = { config: start.config, cursor: start.resumeFromSeq, id: start.executionId, inputs: start.inputs.length };
        await sink.model({ model: "m", messages: [userText("x")] });
      },
    };
    await liveTurn(fx, probe, scriptedModels(failingScript(1)), ["a", "b"], { config, cursor: 41n, executionId: "0000000000000abc" });
    seen = undefined;
    await resume(fx, { h: probe }, scriptedModels(echoScript));
    expect(seen).toEqual({ config, cursor: 41n, id: "0000000000000abc", inputs: 2 });
  });

  it("resume: an invocation cut before all inputs committed is incomplete and nothing runs", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(echoScript), ["a", "b"]);
    fx.truncateAfter(2);
    let ran = false;
    const h: Harness = { describe: () => descriptor("h"), run: async () => void (ran = true) };
    const r = await resume(fx, { h }, scriptedModels(echoScript));
    expect(r).toMatchObject({ kind: "invalid", incomplete: true });
    expect(ran).toBe(false);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT"]);
  });

  it("resume: a version mismatch runs nothing and appends nothing", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness("h", "1"), scriptedModels(failingScript(1)), ["hi"]);
    const before = fx.kinds();
    const models = scriptedModels(echoScript);
    const r = await resume(fx, { h: modelHarness("h", "1 ") }, models);
    expect(r).toMatchObject({ kind: "mismatch" });
    expect(models.calls).toBe(0);
    expect(fx.kinds()).toEqual(before);
  });
});
