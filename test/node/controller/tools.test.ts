/**
 * Host-mediated tool calls and approval gates in the controller (docs/behaviour.md §1.5, §2.4-2.5,
 * §4.11; checklist §8.1 #9-11, checklist §8.3, checklist §8.12, checklist §8.14): validation before intent, record before
 * effect, receipts served on replay, cut intents re-driven once with the recorded key, parks.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, Mediation, ToolResult_Code, ToolResultSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import { ToolExecutionError } from "../../../objects/controller/errors.js";
import { resumeLatest } from "../../../objects/controller/resume.js";
import {
  describer,
  descriptor,
  echoScript,
  fakeExecutor,
  liveTurn,
  newLog,
  outputTexts,
  scriptedModels,
  toolCall,
  toolDeps,
  toolHarness,
  replayLog as replay,
  resumeLog,
  SESSION_UID,
} from "../support/controller-fixture.js";

const uid = SESSION_UID;

const resume = (fx: ReturnType<typeof newLog>, h: Harness, executor = fakeExecutor().executor) => resumeLog(fx, h, { tools: toolDeps(executor) });

describe("host-mediated tool calls", () => {
  it("tool: the intent is durable before the executor runs; the receipt carries the call id", async () => {
    const fx = newLog();
    let journaledBefore: string[] = [];
    const ex = fakeExecutor((c) => {
      journaledBefore = fx.kinds();
      return create(ToolResultSchema, { id: "executor-chosen", output: { ok: true } });
    });
    const out = await liveTurn(fx, toolHarness([toolCall({ args: { n: 1 } })]), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) });
    expect(out).toEqual({ kind: "completed" });
    expect(journaledBefore).toEqual(["EXECUTION_START", "TOOL_CALL"]);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
    const receipt = fx.events()[2]!.event.body;
    expect(receipt.case === "result" && receipt.value.id).toBe("c1");
    expect(ex.calls[0]).toMatchObject({ sessionUid: uid, call: { id: "c1", idempotencyKey: "k1", args: { n: 1 } } });
  });

  it("tool: an unmediated call, a keyless call and non-JSON arguments are refused with nothing journaled, even when swallowed", async () => {
    for (const bad of [
      toolCall({ mediation: Mediation.UNSPECIFIED }),
      toolCall({ mediation: Mediation.IN_HARNESS_REPORTED }),
      toolCall({ idempotencyKey: "" }),
      toolCall({ args: { x: Number.NaN } }),
      toolCall({ args: { x: Number.POSITIVE_INFINITY } }),
      toolCall({ args: { x: 2 ** 53 + 2 } }),
      toolCall({ args: JSON.parse("{" + '"a":{'.repeat(40) + '"b":1' + "}".repeat(41)) }),
    ]) {
      const fx = newLog();
      const ex = fakeExecutor();
      const good = toolCall({ id: "c2", idempotencyKey: "k2" });
      const out = await liveTurn(fx, toolHarness([bad, good], { swallow: true }), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) });
      expect(out, JSON.stringify(bad.args ?? bad.mediation)).toMatchObject({ kind: "failed" });
      expect(fx.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
      expect(ex.calls).toHaveLength(0);
    }
  });

  it("tool: without an executor the call fails closed after its intent is recorded", async () => {
    const fx = newLog();
    const out = await liveTurn(fx, toolHarness([toolCall({})]), scriptedModels(echoScript), [], { tools: toolDeps(undefined) });
    expect(out).toMatchObject({ kind: "failed", reason: "missing_executor" });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "ERROR"]);
  });

  it("replay: serves the recorded receipt without the executor; a changed id, args, key or mediation diverges", async () => {
    const fx = newLog();
    const call = toolCall({ args: { q: "x", list: [1, 2] } });
    await liveTurn(fx, toolHarness([call]), scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
    const same = await replay(fx, toolHarness([toolCall({ args: { list: [1, 2], q: "x" } })]));
    expect(same).toMatchObject({ ok: true, outputs: ["t:ok:0"] });
    for (const changed of [
      toolCall({ id: "other", args: call.args }),
      toolCall({ args: { q: "y", list: [1, 2] } }),
      toolCall({ args: { q: "x", list: [2, 1] } }),
      toolCall({ args: {} }),
      toolCall({}),
      toolCall({ idempotencyKey: "k2", args: call.args }),
      toolCall({ mediation: Mediation.REQUIRES_APPROVAL, args: call.args }),
    ]) {
      const r = await replay(fx, toolHarness([changed]));
      expect(r.ok).toBe(false);
      expect(r.divergence).toMatch(/tool call mismatch/);
    }
  });

  it("resume: an intent cut before its receipt is re-driven once with the recorded key; the effect happens once", async () => {
    const fx = newLog();
    const ex = fakeExecutor();
    await liveTurn(fx, toolHarness([toolCall({ args: { pay: 5 } })]), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) });
    expect(ex.effects.size).toBe(1);
    fx.truncateAfter(2); // the crash lost the receipt (the effect already happened)
    const r = await resume(fx, toolHarness([toolCall({ args: { pay: 5 } })]), ex.executor);
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(ex.calls.map((c) => c.call.idempotencyKey)).toEqual(["k1", "k1"]);
    expect(ex.effects.size).toBe(1);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
    expect(fx.events().filter((e) => e.event.kind === EventKind.EVENT_TOOL_RESULT)).toHaveLength(1);
    const calls = ex.calls.length;
    expect(await replay(fx, toolHarness([toolCall({ args: { pay: 5 } })]))).toMatchObject({ ok: true });
    expect(ex.calls.length).toBe(calls);
  });

  it("resume: serves a recorded receipt and executes only the new call after it", async () => {
    const fx = newLog();
    const ex = fakeExecutor();
    const two = [toolCall({ id: "a", idempotencyKey: "ka" }), toolCall({ id: "b", idempotencyKey: "kb" })];
    await liveTurn(fx, toolHarness(two), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) });
    fx.truncateAfter(3);
    const fresh = fakeExecutor();
    await resume(fx, toolHarness(two), fresh.executor);
    expect(fresh.calls.map((c) => c.call.id)).toEqual(["b"]);
  });

  it("replay: an executor failure the harness handled live is handed to it again, not treated as divergence", async () => {
    const fx = newLog();
    const ex = fakeExecutor((c) => (c.id === "a" ? new ToolExecutionError("executor answered HTTP 500") : create(ToolResultSchema, {})));
    const calls = [toolCall({ id: "a", idempotencyKey: "ka" }), toolCall({ id: "b", idempotencyKey: "kb" })];
    await liveTurn(fx, toolHarness(calls, { swallow: true }), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
    expect(outputTexts(fx.events())).toEqual(["t:refused,t:ok:0"]);
    const r = await replay(fx, toolHarness(calls, { swallow: true }));
    expect(r).toMatchObject({ ok: true, outputs: ["t:refused,t:ok:0"] });
  });

  it("report: a harness report carrying approval receipt fields is refused and nothing is written", async () => {
    const fx = newLog();
    const forger: Harness = {
      describe: () => descriptor("h"),
      run: async (_s, sink) => sink.report(create(ToolResultSchema, { id: "x", code: ToolResult_Code.APPROVAL_DENIED, isError: true })),
    };
    const out = await liveTurn(fx, forger, scriptedModels(echoScript), []);
    expect(out).toMatchObject({ kind: "failed" });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
  });
});

describe("approval gates", () => {
  const gated = (id = "g1", key = "kg") => toolCall({ id, idempotencyKey: key, mediation: Mediation.REQUIRES_APPROVAL, args: { amount: 10 } });

  function decide(fx: ReturnType<typeof newLog>, approved: boolean, requestSeq = 3n) {
    const r = fx.log.append(
      [
        create(EventSchema, {
          executionId: fx.events()[0]!.event.executionId,
          kind: EventKind.EVENT_APPROVAL_RESULT,
          body: { case: "approvalResult", value: { toolCallId: "g1", approved, reason: approved ? "" : "too much", requestSeq } },
        }),
      ],
      { fence: 0n, mintFence: true },
    );
    if (!r.ok) throw new Error(r.reason);
  }

  it("gate: a live gated call journals TOOL_CALL then APPROVAL_REQUEST and parks; nothing else is written", async () => {
    const fx = newLog();
    const ex = fakeExecutor();
    const parked: unknown[] = [];
    const out = await liveTurn(fx, toolHarness([gated()], { swallow: true }), scriptedModels(echoScript), [], {
      tools: toolDeps(ex.executor, { onPark: (g) => parked.push(g) }),
    });
    expect(out).toMatchObject({ kind: "parked", gate: { toolCallId: "g1", requestSeq: 3n } });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST"]);
    expect(ex.calls).toHaveLength(0);
    expect(parked).toHaveLength(1);
  });

  it("gate: a memory-snapshot harness, an empty or reused call id are refused before any intent", async () => {
    const fx = newLog();
    const out = await liveTurn(fx, toolHarness([gated()]), scriptedModels(echoScript), [], {
      tools: toolDeps(fakeExecutor().executor, { approvalsAllowed: false }),
    });
    expect(out).toMatchObject({ kind: "failed" });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
    const fx2 = newLog();
    await liveTurn(fx2, toolHarness([gated("")]), scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
    expect(fx2.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
    const fx3 = newLog();
    await liveTurn(fx3, toolHarness([toolCall({ id: "g1" }), gated("g1")]), scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
    expect(fx3.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_RESULT", "ERROR"]);
  });

  it("gate: recovery of an undecided gate parks again without writing", async () => {
    const fx = newLog();
    await liveTurn(fx, toolHarness([gated()]), scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
    const r = await resume(fx, toolHarness([gated()]));
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "parked" } });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST"]);
  });

  for (const [name, approved, behave, code, effects] of [
    ["approved", true, undefined, ToolResult_Code.CODE_UNSPECIFIED, 1],
    ["denied", false, undefined, ToolResult_Code.APPROVAL_DENIED, 0],
    ["approved but the executor fails", true, () => new ToolExecutionError("executor down"), ToolResult_Code.EXECUTOR_ERROR, 0],
  ] as const) {
    it(`gate: ${name}: recovery writes the receipt with both seqs and the turn ends; replay serves it without the executor`, async () => {
      const fx = newLog();
      await liveTurn(fx, toolHarness([gated()]), scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
      decide(fx, approved);
      const ex = fakeExecutor(behave);
      const r = await resume(fx, toolHarness([gated()]), ex.executor);
      expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
      expect(ex.effects.size).toBe(effects);
      expect(ex.calls.length).toBe(approved ? 1 : 0);
      expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT", "OUTPUT", "END"]);
      const receipt = fx.events()[4]!.event.body;
      expect(receipt.case === "result" && receipt.value).toMatchObject({
        id: "g1",
        code,
        isError: code !== ToolResult_Code.CODE_UNSPECIFIED,
        approvalRequestSeq: 3n,
        approvalDecisionSeq: 4n,
      });
      const calls = ex.calls.length;
      expect(await replay(fx, toolHarness([gated()]))).toMatchObject({ ok: true });
      expect(ex.calls.length).toBe(calls);
      expect(fx.journal.verify().ok).toBe(true);
    });
  }

  it("gate: an approved gate without an executor fails closed and keeps the decision (no receipt)", async () => {
    const fx = newLog();
    await liveTurn(fx, toolHarness([gated()]), scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
    decide(fx, true);
    const r = await resumeLatest(fx.events(), {
      sessionUid: uid,
      log: fx.log,
      mintFence: () => fx.journal.mintFence(),
      describe: describer({ h: toolHarness([gated()]) }),
      defaultHarness: "h",
      models: scriptedModels(echoScript),
      observe: () => undefined,
      signal: new AbortController().signal,
      tools: toolDeps(undefined),
    });
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "failed", reason: "missing_executor" } });
    expect(fx.kinds()).not.toContain("TOOL_RESULT");
  });

  it("gate: a receipt that contradicts its decision is caught before anything runs", async () => {
    const fx = newLog();
    await liveTurn(fx, toolHarness([gated()]), scriptedModels(echoScript), [], { tools: toolDeps(fakeExecutor().executor) });
    decide(fx, false);
    const execId = fx.events()[0]!.event.executionId;
    fx.log.append(
      [
        create(EventSchema, {
          executionId: execId,
          kind: EventKind.EVENT_TOOL_RESULT,
          body: { case: "result", value: { id: "g1", code: ToolResult_Code.CODE_UNSPECIFIED, approvalRequestSeq: 3n, approvalDecisionSeq: 4n } },
        }),
      ],
      { fence: 0n, mintFence: true },
    );
    const ex = fakeExecutor();
    const before = fx.kinds();
    const r = await resume(fx, toolHarness([gated()]), ex.executor);
    expect(r).toMatchObject({ kind: "diverged", detail: expect.stringMatching(/^replay diverged at seq 5: the receipt/) });
    expect(ex.calls).toHaveLength(0);
    expect(fx.kinds()).toEqual(before);
  });
});
