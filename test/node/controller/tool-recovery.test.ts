/**
 * Tool calls on replay and on a resume's live tail (docs/behaviour.md §2.4-2.5, §1.5; checklist §8.12
 * #70, #79): argument shapes that JSON tells apart are distinct identities on every recorded path,
 * and a tool failure after the recorded prefix is that failure, not a divergence.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventKind, Mediation, type ToolCall } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { userText } from "../../../proto/messages.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import { ReplayDivergedError, ToolCallRefusedError, ToolExecutionError } from "../../../objects/controller/errors.js";
import { replayJournal } from "../../../objects/controller/replay.js";
import {
  describer,
  descriptor,
  echoScript,
  fakeExecutor,
  liveTurn,
  newLog,
  scriptedModels,
  toolCall,
  toolDeps,
  toolHarness,
  resumeLog,
  SESSION_UID,
} from "../support/controller-fixture.js";

const uid = SESSION_UID;

const resume = (fx: ReturnType<typeof newLog>, h: Harness, ex: ReturnType<typeof fakeExecutor>, models = scriptedModels(echoScript)) =>
  resumeLog(fx, h, { models, tools: toolDeps(ex.executor) });

describe("argument identity", () => {
  const withArgs = (args: JsonObject | undefined) => toolCall({ args });
  // Pairs JSON tells apart: absent vs empty, a missing key vs a null value, an object vs a list.
  const shapes: [string, JsonObject | undefined, JsonObject | undefined][] = [
    ["absent vs empty", undefined, {}],
    ["empty vs absent", {}, undefined],
    ["missing key vs null value", {}, { a: null }],
    ["null value vs missing key", { a: null }, {}],
    ["object vs list", { a: {} }, { a: [] }],
    ["list vs object", { a: [] }, { a: {} }],
    ["nested null vs nested empty", { a: { b: null } }, { a: {} }],
  ];

  for (const [name, recorded, reissued] of shapes) {
    it(`replay, resume with result, resume at intent: ${name} args diverge; no executor or model call (checklist §8.12 #70)`, async () => {
      // Replay of the completed execution.
      const fx = newLog();
      const ex = fakeExecutor();
      await liveTurn(fx, toolHarness([withArgs(recorded)]), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) });
      expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
      const models = scriptedModels(echoScript);
      const same = await replayJournal(fx.events(), {
        sessionUid: uid,
        describe: describer({ h: toolHarness([withArgs(recorded)]) }),
        defaultHarness: "h",
        models,
      });
      expect(same).toMatchObject({ ok: true });
      const r = await replayJournal(fx.events(), {
        sessionUid: uid,
        describe: describer({ h: toolHarness([withArgs(reissued)]) }),
        defaultHarness: "h",
        models,
      });
      expect(r).toMatchObject({ ok: false, divergenceSeq: 2n, modelCalls: 0 });
      expect(r.divergence).toMatch(/tool call mismatch/);

      // Resume with the receipt recorded (cut after TOOL_RESULT), and at the intent (cut after TOOL_CALL).
      for (const cut of [3, 2]) {
        fx.truncateAfter(cut);
        const before = fx.kinds();
        const fresh = fakeExecutor();
        const m = scriptedModels(echoScript);
        const out = await resume(fx, toolHarness([withArgs(reissued)]), fresh, m);
        expect(out, `cut after ${cut}`).toMatchObject({
          kind: "redriven",
          outcome: { kind: "failed", code: Code.FailedPrecondition, message: expect.stringMatching(/tool call mismatch/) },
        });
        expect(fresh.calls).toHaveLength(0);
        expect(m.calls).toBe(0);
        expect(fx.kinds()).toEqual([...before, "ERROR"]);
      }
      expect(ex.calls).toHaveLength(1);
    });
  }

  it('checklist §8.12 #70 replay, resume: arguments that are not plain JSON ("unconvertible") diverge at the recorded call; no executor or model call', async () => {
    const fx = newLog();
    const ex = fakeExecutor();
    await liveTurn(fx, toolHarness([withArgs({ a: 1 })]), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) });
    const bad = withArgs({ a: Number.NaN });
    const r = await replayJournal(fx.events(), {
      sessionUid: uid,
      describe: describer({ h: toolHarness([bad]) }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
    });
    expect(r).toMatchObject({ ok: false, modelCalls: 0 });
    expect(r.divergence).toMatch(/^replay diverged at seq 2: tool call mismatch.*not plain JSON/);
    fx.truncateAfter(2);
    const fresh = fakeExecutor();
    const out = await resume(fx, toolHarness([bad]), fresh);
    expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "failed", message: expect.stringMatching(/^replay diverged at seq 2/) } });
    expect(fresh.calls).toHaveLength(0);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "ERROR"]);
  });
});

describe("live-tail tool errors", () => {
  /** Echo-like: one model call (the recorded prefix), then `call`; what the call threw is kept and rethrown. */
  function tailHarness(call: ToolCall, seen: unknown[]): Harness {
    return {
      describe: () => descriptor("h"),
      async run(_start, sink) {
        await sink.model({ model: "m", messages: [userText("hello")] });
        try {
          await sink.toolCall(call);
        } catch (e) {
          seen.push(e);
          throw e;
        }
      },
    };
  }

  const tails: [string, ToolCall, (e: unknown) => void, string[]][] = [
    ["an executor error", toolCall({ id: "c1", idempotencyKey: "k1" }), (e) => expect(e).toBeInstanceOf(ToolExecutionError), ["TOOL_CALL", "ERROR"]],
    [
      "an empty key",
      toolCall({ id: "c1", idempotencyKey: "" }),
      (e) => expect(e).toMatchObject({ name: "ToolCallRefusedError", kind: "missing_key" }),
      ["ERROR"],
    ],
    [
      "an unmediated call",
      toolCall({ id: "c1", mediation: Mediation.IN_HARNESS_REPORTED }),
      (e) => expect(e).toMatchObject({ name: "ToolCallRefusedError", kind: "unmediated" }),
      ["ERROR"],
    ],
    [
      "an unspecified mediation",
      toolCall({ id: "c1", mediation: Mediation.UNSPECIFIED }),
      (e) => expect(e).toMatchObject({ name: "ToolCallRefusedError", kind: "unmediated" }),
      ["ERROR"],
    ],
  ];
  for (const [name, call, check, written] of tails) {
    it(`resume: ${name} after a recorded prefix surfaces as itself, not as a divergence (checklist §8.12 #79)`, async () => {
      const fx = newLog();
      const models = scriptedModels(echoScript);
      // The live run was cut right after its model call's OUTPUT.
      await liveTurn(fx, tailHarness(toolCall({ id: "c0", idempotencyKey: "k0" }), []), models, ["hello"], { tools: toolDeps(fakeExecutor().executor) });
      fx.truncateAfter(4);
      expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT"]);
      const ex = fakeExecutor(() => new ToolExecutionError("executor answered HTTP 503"));
      const seen: unknown[] = [];
      const out = await resume(fx, tailHarness(call, seen), ex, models);
      expect(seen).toHaveLength(1);
      expect(seen[0]).not.toBeInstanceOf(ReplayDivergedError);
      check(seen[0]);
      if (seen[0] instanceof ToolCallRefusedError) expect(ex.calls).toHaveLength(0);
      else expect(ex.calls.map((c) => c.call.id)).toEqual(["c1"]);
      expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "failed", code: Code.Internal } });
      expect(out.kind === "redriven" && out.outcome.kind === "failed" && out.outcome.message).toBe((seen[0] as Error).message);
      expect(models.calls).toBe(1); // the live run's only: the recorded prefix was served
      expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", ...written]);
      const err = fx.events().at(-1)!.event;
      expect(err.kind).toBe(EventKind.EVENT_ERROR);
      expect(err.body.case === "error" && err.body.value.description).not.toMatch(/diverged/);
    });
  }
});
