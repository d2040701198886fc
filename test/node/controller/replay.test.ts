/**
 * Controller replay (docs/behaviour.md §2.4, checklist §8.1 #1, checklist §8.7 #31-39, checklist §8.11, checklist §8.13 #86):
 * recorded outputs come back with zero model calls, and any change in what the harness asks for
 * is a divergence; the journal is never written.
 */
import { describe, expect, it } from "vitest";
import { textOf, userText } from "../../../proto/messages.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import { replayJournal } from "../../../objects/controller/replay.js";
import {
  counterScript,
  describer,
  descriptor,
  echoScript,
  failingScript,
  liveTurn,
  modelHarness,
  newLog,
  scriptedModels,
} from "../support/controller-fixture.js";

const uid = "sess-000000000000000000000001";

describe("replayJournal", () => {
  it("replay: a nondeterministic model's recorded answer comes back with zero model calls", async () => {
    const fx = newLog();
    const live = scriptedModels(counterScript);
    const h = modelHarness();
    await liveTurn(fx, h, live, ["hi"]);
    await liveTurn(fx, h, live, ["again"]);
    expect(live.calls).toBe(2);
    const head = fx.journal.head();
    const replayModels = scriptedModels(counterScript);
    const r = await replayJournal(fx.events(), { sessionUid: uid, describe: describer({ h }), defaultHarness: "h", models: replayModels });
    expect(r).toMatchObject({ ok: true, outputs: ["answer #1", "answer #2"], modelCalls: 0, executions: 2 });
    expect(replayModels.calls).toBe(0);
    expect(fx.journal.head()).toEqual(head);
  });

  it("replay: a different model request on replay fails with an I0 divergence", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(echoScript), ["hi"]);
    const changed: Harness = {
      describe: () => descriptor("h"),
      run: async (_s, sink) => void (await sink.model({ model: "m", messages: [userText("something else")] })),
    };
    const r = await replayJournal(fx.events(), {
      sessionUid: uid,
      describe: describer({ h: changed }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
    });
    expect(r.ok).toBe(false);
    expect(r.divergence).toMatch(/I0/);
    expect(r.divergenceSeq).toBe(3n);
  });

  it("replay: a harness that makes fewer effect calls than recorded diverges (under-consumption)", async () => {
    const fx = newLog();
    await liveTurn(
      fx,
      modelHarness("h", "1", async (sink) => sink.output("extra")),
      scriptedModels(echoScript),
      ["hi"],
    );
    const r = await replayJournal(fx.events(), {
      sessionUid: uid,
      describe: describer({ h: modelHarness() }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
    });
    expect(r).toMatchObject({ ok: false, divergenceSeq: 5n });
    expect(r.divergence).toMatch(/finished without re-issuing/);
  });

  it("replay: directly emitted output must match the recorded text", async () => {
    const say = (text: string): Harness => ({ describe: () => descriptor("h"), run: async (_s, sink) => sink.output(text) });
    const fx = newLog();
    await liveTurn(fx, say("hello"), scriptedModels(echoScript), []);
    const same = await replayJournal(fx.events(), {
      sessionUid: uid,
      describe: describer({ h: say("hello") }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
    });
    expect(same).toMatchObject({ ok: true, outputs: ["hello"] });
    const other = await replayJournal(fx.events(), {
      sessionUid: uid,
      describe: describer({ h: say("bye") }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
    });
    expect(other.divergence).toMatch(/output mismatch/);
  });

  it("replay: a harness that swallows a divergence still fails", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(echoScript), ["hi"]);
    const stubborn: Harness = {
      describe: () => descriptor("h"),
      async run(_s, sink) {
        await sink.model({ model: "m", messages: [userText("different")] }).catch(() => undefined);
        await sink.model({ model: "m", messages: [userText("hi")] }).catch(() => undefined);
      },
    };
    const r = await replayJournal(fx.events(), {
      sessionUid: uid,
      describe: describer({ h: stubborn }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
    });
    expect(r.ok).toBe(false);
    expect(r.divergence).toMatch(/I0/);
  });

  it("replay: failed turns are skipped but stay in the next turn's history; each turn sees its own Start", async () => {
    const fx = newLog();
    const models = scriptedModels(failingScript(1));
    const seen: { inputs: string[]; history: string[]; executionId: string }[] = [];
    const probe = modelHarness("h", "1");
    const recorder: Harness = {
      describe: () => descriptor("h"),
      async run(start, sink) {
        seen.push({ inputs: start.inputs.map(textOf), history: start.history.map((e) => String(e.kind)), executionId: start.executionId });
        await probe.run(start, sink);
      },
    };
    await liveTurn(fx, recorder, models, ["first"]); // provider fails: START, INPUT, MODEL_CALL, ERROR
    await liveTurn(fx, recorder, models, ["second"]);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "ERROR", "EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    seen.length = 0;
    const r = await replayJournal(fx.events(), {
      sessionUid: uid,
      describe: describer({ h: recorder }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
    });
    expect(r).toMatchObject({ ok: true, outputs: ["echo:second"], executions: 1 });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.inputs).toEqual(["second"]);
    expect(seen[0]!.history).toEqual(["12", "1", "2", "11"]);
  });

  it("replay: preflight checks every completed execution before any harness runs", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness("h", "1"), scriptedModels(echoScript), ["a"], { name: "h" });
    await liveTurn(fx, modelHarness("g", "2"), scriptedModels(echoScript), ["b"], { name: "g" });
    let ran = 0;
    const counting: Harness = { describe: () => descriptor("h", "1"), run: async (s, sink) => void (ran++, await modelHarness().run(s, sink)) };
    const r = await replayJournal(fx.events(), {
      sessionUid: uid,
      describe: describer({ h: counting, g: modelHarness("g", "3") }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
    });
    expect(r.ok).toBe(false);
    expect(r.divergence).toMatch(/version "2".*version "3"/);
    expect(ran).toBe(0);
  });

  it("replay: an execution recorded on a harness this host does not serve is refused", async () => {
    const fx = newLog();
    await liveTurn(fx, modelHarness(), scriptedModels(echoScript), ["a"], { name: "gone" });
    const r = await replayJournal(fx.events(), { sessionUid: uid, describe: describer({}), defaultHarness: "h", models: scriptedModels(echoScript) });
    expect(r.divergence).toMatch(/does not serve/);
  });
});
