/**
 * Recorded tool evidence the host would never write, and a handled executor failure, on replay and
 * resume (docs/behaviour.md §2.4-2.5; checklist §8.12 #65, #66, #76). The malformed journals are written
 * straight into the journal (the host's own writers cannot produce them); the harness then re-issues
 * exactly the call the journal names, so the only thing wrong is the evidence.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, Mediation, ToolResultSchema, type Event, type ToolCall } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText } from "../../../proto/messages.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import { ToolExecutionError } from "../../../objects/controller/errors.js";
import { endEvent } from "../../../objects/controller/events.js";
import {
  echoScript,
  fakeExecutor,
  liveTurn,
  newLog,
  outputTexts,
  scriptedModels,
  toolCall,
  toolDeps,
  toolHarness,
  appendRaw as append,
  replayLog as replay,
  resumeLog,
} from "../support/controller-fixture.js";

type Body = MessageInitShape<typeof EventSchema>["body"];

const exe = "exec-a";
const ev = (kind: EventKind, body?: Body) => create(EventSchema, { executionId: exe, kind, ...(body ? { body } : {}) });
const start = () => ev(EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { harness: "h", harnessVersion: "1", inputCount: 0n } });
const callEv = (c: ToolCall) => ev(EventKind.EVENT_TOOL_CALL, { case: "tool", value: c });
const resultEv = (id: string) => ev(EventKind.EVENT_TOOL_RESULT, { case: "result", value: create(ToolResultSchema, { id, output: { ok: true } }) });
/** What toolHarness outputs after one successful call. */
const okOutput = () => ev(EventKind.EVENT_OUTPUT, { case: "message", value: assistantText("t:ok:0") });

const resume = (fx: ReturnType<typeof newLog>, h: Harness, ex = fakeExecutor(), models = scriptedModels(echoScript)) =>
  resumeLog(fx, h, { models, tools: toolDeps(ex.executor) });

/**
 * Runs `evidence` twice: as the cut tail of an interrupted execution (Resume) and as the body of a
 * completed one (Replay, with the harness's output and END after it). Both must fail (Resume as
 * `expectResume` checks, Replay with `replayDivergence`) with no executor or model call; a re-driven
 * Resume appends only an ERROR.
 */
async function bothPaths(call: ToolCall, evidence: Event[], expectResume: (out: Awaited<ReturnType<typeof resume>>) => void, replayDivergence: RegExp) {
  const fx = newLog();
  append(fx, [start(), ...evidence]);
  const before = fx.kinds();
  const ex = fakeExecutor();
  const models = scriptedModels(echoScript);
  const out = await resume(fx, toolHarness([call]), ex, models);
  expectResume(out);
  if (out.kind === "redriven") expect(fx.kinds()).toEqual([...before, "ERROR"]);
  else expect(fx.kinds()).toEqual(before);

  const done = newLog();
  append(done, [start(), ...evidence, okOutput(), endEvent(exe, "COMPLETED")]);
  const r = await replay(done, toolHarness([call]), models);
  expect(r).toMatchObject({ ok: false, modelCalls: 0 });
  expect(r.divergence).toMatch(replayDivergence);
  expect(ex.calls).toHaveLength(0);
  expect(models.calls).toBe(0);
}

const diverged = (out: Awaited<ReturnType<typeof resume>>) =>
  expect(out).toMatchObject({
    kind: "redriven",
    outcome: { kind: "failed", code: Code.FailedPrecondition, message: expect.stringMatching(/^replay diverged at seq \d+/) },
  });

describe("malformed tool evidence (checklist §8.12 #65)", () => {
  const c1 = toolCall({ id: "c1", idempotencyKey: "k1" });
  const cases: [string, Event[]][] = [
    ["a result with no preceding call", [resultEv("c1")]],
    ["a call without its payload", [ev(EventKind.EVENT_TOOL_CALL), resultEv("c1")]],
    ["a result without its payload", [callEv(c1), ev(EventKind.EVENT_TOOL_RESULT)]],
    ["a result with another call's id", [callEv(c1), resultEv("c2")]],
  ];
  for (const [name, evidence] of cases) {
    it(`replay, resume: ${name} diverges; no executor or model call, Resume appends only ERROR (checklist §8.12 #65)`, async () => {
      await bothPaths(c1, evidence, diverged, /^replay diverged at seq \d+/);
    });
  }
});

describe("recorded intents the host would refuse (checklist §8.12 #66)", () => {
  // A re-issued call the host would refuse live cannot be the recorded one: ErrReplayDiverged at
  // the recorded call, its message wrapping the specific cause (objects/controller/recorded-sink.ts).
  const refusals: [string, ToolCall, RegExp][] = [
    ["an empty key", toolCall({ id: "c1", idempotencyKey: "" }), /idempotency key/],
    ["in-harness mediation", toolCall({ id: "c1", mediation: Mediation.IN_HARNESS_REPORTED }), /mediat/],
    ["unspecified mediation", toolCall({ id: "c1", mediation: Mediation.UNSPECIFIED }), /mediat/],
  ];
  for (const [name, call, cause] of refusals) {
    it(`replay, resume: a recorded intent with ${name} diverges wrapping that cause, never runs the executor (checklist §8.12 #66)`, async () => {
      await bothPaths(
        call,
        [callEv(call), resultEv("c1")],
        (out) => {
          expect(out).toMatchObject({
            kind: "redriven",
            outcome: { kind: "failed", code: Code.FailedPrecondition, message: expect.stringMatching(/^replay diverged at seq 2: tool call mismatch/) },
          });
          expect(out.kind === "redriven" && out.outcome.kind === "failed" && out.outcome.message).toMatch(cause);
        },
        cause,
      );
    });
  }

  it("replay, resume: an approval-mediated intent without its request (a pre-approval writer's receipt) is refused before anything runs (checklist §8.12 #66)", async () => {
    const call = toolCall({ id: "c1", mediation: Mediation.REQUIRES_APPROVAL });
    // As the cut tail, Resume reaches the gate and finds no request after the call: divergence.
    const fx = newLog();
    append(fx, [start(), callEv(call)]);
    const ex = fakeExecutor();
    diverged(await resume(fx, toolHarness([call]), ex));
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "ERROR"]);
    // With a receipt (or anything) after it, the journal is an invalid log: nothing runs or is written.
    const withReceipt = newLog();
    append(withReceipt, [start(), callEv(call), resultEv("c1")]);
    const before = withReceipt.kinds();
    expect(await resume(withReceipt, toolHarness([call]), ex)).toMatchObject({ kind: "invalid", detail: expect.stringMatching(/unresolved approval gate/) });
    expect(withReceipt.kinds()).toEqual(before);
    append(withReceipt, [okOutput(), endEvent(exe, "COMPLETED")]);
    const r = await replay(withReceipt, toolHarness([call]));
    expect(r).toMatchObject({ ok: false, modelCalls: 0, divergence: expect.stringMatching(/^invalid execution log: .*unresolved approval gate/) });
    expect(ex.calls).toHaveLength(0);
  });
});

describe("a handled executor failure (checklist §8.12 #76)", () => {
  it("resume: after a handled executor failure a lost END is restored alone; no effect repeats; a second Resume is a no-op (checklist §8.12 #76)", async () => {
    const fx = newLog();
    const ex = fakeExecutor((c) =>
      c.id === "a" ? new ToolExecutionError("executor answered HTTP 500") : create(ToolResultSchema, { output: { paid: true } }),
    );
    const calls = [toolCall({ id: "a", idempotencyKey: "ka" }), toolCall({ id: "b", idempotencyKey: "kb" })];
    expect(
      await liveTurn(fx, toolHarness(calls, { swallow: true }), scriptedModels(echoScript), [], { executionId: exe, tools: toolDeps(ex.executor) }),
    ).toEqual({ kind: "completed" });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
    expect(ex.calls.map((c) => c.call.id)).toEqual(["a", "b"]);
    fx.truncateAfter(5); // the crash lost only END
    const prefix = fx.events().map((e) => e.event);

    const fresh = fakeExecutor();
    const models = scriptedModels(echoScript);
    const out = await resume(fx, toolHarness(calls, { swallow: true }), fresh, models);
    expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
    expect(
      fx
        .events()
        .slice(0, prefix.length)
        .map((e) => e.event),
    ).toEqual(prefix);
    // The failed call is handed to the harness as the failure it was; the served receipt is b's.
    expect(outputTexts(fx.events())).toEqual(["t:refused,t:ok:0"]);
    expect(fresh.calls).toHaveLength(0);
    expect(models.calls).toBe(0);

    const head = fx.journal.head();
    expect(await resume(fx, toolHarness(calls, { swallow: true }), fresh, models)).toEqual({ kind: "noop" });
    expect(fx.journal.head()).toEqual(head);
    expect(fresh.calls).toHaveLength(0);
    expect(fx.journal.verify().ok).toBe(true);
  });
});
