/**
 * Approval gates in the controller, beyond the basic park and recovery in tools.test.ts
 * (docs/behaviour.md §4.11; checklist §8.14 #94, #112, #113, #115, #116, #122): malformed gate evidence
 * is an invalid log (nothing runs, nothing is appended), a changed re-issued gated call diverges and
 * stays diverged, nothing but the request follows a gated call's intent however the harness races
 * it, and a failed gate append is sticky, writes nothing of the gate and leaves it recoverable.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  EventKind,
  EventSchema,
  Mediation,
  ToolResult_Code,
  ToolResultSchema,
  UsageSchema,
  type Event,
  type ToolCall,
} from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { userText } from "../../../proto/messages.js";
import type { EventSink, Harness } from "../../../runtimes/harness-spi.js";
import { ApprovalParkedError, ReplayDivergedError } from "../../../objects/controller/errors.js";
import { endEvent, inputEvent } from "../../../objects/controller/events.js";
import type { TurnLog } from "../../../objects/controller/turn-writer.js";
import type { AppendResult } from "../../../objects/journal/journal.js";
import { resumeLatest } from "../../../objects/controller/resume.js";
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
  appendRaw as append,
  replayLog as replay,
  resumeLog,
  SESSION_UID,
} from "../support/controller-fixture.js";

type Body = MessageInitShape<typeof EventSchema>["body"];

const uid = SESSION_UID;
const exe = "exec-a";
const gated = (init: Partial<ToolCall> = {}) =>
  toolCall({ id: "g1", idempotencyKey: "kg", mediation: Mediation.REQUIRES_APPROVAL, args: { amount: 10 }, ...init });
const ev = (kind: EventKind, body: Body) => create(EventSchema, { executionId: exe, kind, body });

const resume = (fx: ReturnType<typeof newLog>, h: Harness, ex = fakeExecutor(), models = scriptedModels(echoScript)) =>
  resumeLog(fx, h, { models, tools: toolDeps(ex.executor) });

/** START, TC g1, AR g1 (request at seq 3) for execution exec-a. */
async function parkedLog() {
  const fx = newLog();
  expect(
    await liveTurn(fx, toolHarness([gated()]), scriptedModels(echoScript), [], { executionId: exe, tools: toolDeps(fakeExecutor().executor) }),
  ).toMatchObject({ kind: "parked" });
  return fx;
}

const decision = (approved: boolean, requestSeq = 3n) =>
  ev(EventKind.EVENT_APPROVAL_RESULT, { case: "approvalResult", value: { toolCallId: "g1", approved, reason: approved ? "" : "no", requestSeq } });

describe("records past an open gate", () => {
  for (const [name, records] of [
    ["a model call", [ev(EventKind.EVENT_MODEL_CALL, { case: "model", value: { model: "m", inputHash: "x", id: "mc1" } })]],
    ["an output", [ev(EventKind.EVENT_OUTPUT, { case: "message", value: userText("more") })]],
    [
      "another gated call",
      [
        ev(EventKind.EVENT_TOOL_CALL, { case: "tool", value: gated({ id: "g2", idempotencyKey: "k2" }) }),
        ev(EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: "g2" } }),
      ],
    ],
    ["usage", [ev(EventKind.EVENT_USAGE, { case: "usage", value: { inputTokens: 1n } })]],
    ["an input", [inputEvent(exe, userText("late"))]],
  ] as [string, Event[]][]) {
    it(`resume, replay: ${name} past an unresolved gate is an invalid log; nothing runs or is appended (checklist §8.14 #94)`, async () => {
      const fx = await parkedLog();
      append(fx, records);
      const before = fx.kinds();
      const ex = fakeExecutor();
      const r = await resume(fx, toolHarness([gated()]), ex);
      expect(r).toMatchObject({ kind: "invalid", incomplete: false });
      expect(r.kind === "invalid" && r.detail).toMatch(/unresolved approval gate|comes after the execution's effects/);
      expect(fx.kinds()).toEqual(before);
      expect(ex.calls).toHaveLength(0);
      append(fx, [endEvent(exe, "COMPLETED")]);
      expect(await replay(fx, toolHarness([gated()]))).toMatchObject({ ok: false, divergence: expect.stringMatching(/^invalid execution log/) });
    });
  }
});

describe("a receipt without its request or decision", () => {
  const receipt = (init: Record<string, unknown>) =>
    ev(EventKind.EVENT_TOOL_RESULT, { case: "result", value: create(ToolResultSchema, { id: "g1", ...init }) });
  const request = ev(EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: "g1" } });
  const cases: [string, ToolCall, Event[]][] = [
    ["no request and no decision", gated(), [receipt({ approvalRequestSeq: 3n, approvalDecisionSeq: 4n })]],
    ["a request but no decision", gated(), [request, receipt({ approvalRequestSeq: 3n, approvalDecisionSeq: 4n })]],
    ["a bare receipt for a gated call", gated(), [receipt({})]],
    [
      "gate fields on an ordinary call's receipt",
      toolCall({ id: "g1" }),
      [receipt({ code: ToolResult_Code.APPROVAL_DENIED, isError: true, approvalRequestSeq: 2n, approvalDecisionSeq: 2n })],
    ],
  ];
  for (const [name, call, records] of cases) {
    it(`resume, replay: ${name} is an invalid log; nothing runs or is appended (checklist §8.14 #115)`, async () => {
      const fx = newLog();
      append(fx, [ev(EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { harness: "h", harnessVersion: "1", inputCount: 0n } })]);
      append(fx, [ev(EventKind.EVENT_TOOL_CALL, { case: "tool", value: call }), ...records]);
      const before = fx.kinds();
      const ex = fakeExecutor();
      const models = scriptedModels(echoScript);
      expect(await resume(fx, toolHarness([call]), ex, models)).toMatchObject({ kind: "invalid", incomplete: false });
      expect(fx.kinds()).toEqual(before);
      append(fx, [ev(EventKind.EVENT_OUTPUT, { case: "message", value: userText("t:ok:0") }), endEvent(exe, "COMPLETED")]);
      expect(await replay(fx, toolHarness([call]))).toMatchObject({ ok: false, divergence: expect.stringMatching(/^invalid execution log/), modelCalls: 0 });
      expect(ex.calls).toHaveLength(0);
      expect(models.calls).toBe(0);
    });
  }
});

/** Re-issues `call`, then (swallowing every error) tries each sink method; records what each did. */
function stubbornHarness(call: ToolCall, seen: unknown[]): Harness {
  const attempt = async (f: () => Promise<unknown>) => {
    try {
      await f();
      seen.push("ok");
    } catch (e) {
      seen.push(e);
    }
  };
  return {
    describe: () => descriptor("h"),
    async run(_s, sink: EventSink) {
      await attempt(() => sink.toolCall(call));
      await attempt(() => sink.toolCall(gated({ id: "g9", idempotencyKey: "k9" })));
      await attempt(() => sink.toolCall(toolCall({ id: "c9", idempotencyKey: "k10" })));
      await attempt(() => sink.output("carry on"));
      await attempt(() => sink.usage(create(UsageSchema, { inputTokens: 1n })));
      await attempt(() => sink.model({ model: "m", messages: [userText("more")] }));
      await attempt(() => sink.report(create(ToolResultSchema, { id: "r1" })));
    },
  };
}

describe("a changed re-issued gated call", () => {
  const changes: [string, ToolCall][] = [
    ["id", gated({ id: "g2" })],
    ["tool", gated({ tool: "other" })],
    ["args", gated({ args: { amount: 11 } })],
    ["nested args", gated({ args: { amount: 10, to: { acct: "a" } } })],
    ["key", gated({ idempotencyKey: "kx" })],
    ["mediation", gated({ mediation: Mediation.CONTROLLER_MEDIATED })],
  ];
  for (const decided of [false, true]) {
    for (const [what, changed] of changes) {
      it(`resume (${decided ? "decided" : "undecided"} gate): a changed ${what} diverges, stays diverged for every later sink call; no executor or model call, only an ERROR (checklist §8.14 #116)`, async () => {
        const fx = await parkedLog();
        if (decided) append(fx, [decision(true)]);
        const before = fx.kinds();
        const ex = fakeExecutor();
        const models = scriptedModels(echoScript);
        const seen: unknown[] = [];
        const r = await resume(fx, stubbornHarness(changed, seen), ex, models);
        expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "failed", code: Code.FailedPrecondition } });
        expect(seen).toHaveLength(7);
        expect(seen[0]).toBeInstanceOf(ReplayDivergedError);
        for (const later of seen.slice(1)) expect(later).toBe(seen[0]);
        expect(ex.calls).toHaveLength(0);
        expect(models.calls).toBe(0);
        expect(fx.kinds()).toEqual([...before, "ERROR"]);
      });
    }
  }

  it("replay: a changed re-issued gated call of a completed execution diverges without the executor (checklist §8.14 #116)", async () => {
    const fx = await parkedLog();
    append(fx, [decision(false)]);
    const ex = fakeExecutor();
    expect(await resume(fx, toolHarness([gated()]), ex)).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(await replay(fx, toolHarness([gated()]))).toMatchObject({ ok: true });
    for (const [, changed] of changes) {
      const r = await replay(fx, toolHarness([changed]));
      expect(r).toMatchObject({ ok: false, modelCalls: 0 });
      expect(r.divergence).toMatch(/tool call mismatch/);
    }
    expect(ex.calls).toHaveLength(0);
  });
});

describe("output racing a gated call", () => {
  it("live: outputs issued concurrently with a gated call never land after its intent except the request; after Run late calls fail with the park error (checklist §8.14 #122)", async () => {
    const fx = newLog();
    const ex = fakeExecutor();
    let retained: EventSink | undefined;
    const settled: PromiseSettledResult<unknown>[][] = [];
    const racer: Harness = {
      describe: () => descriptor("h"),
      async run(_s, sink) {
        retained = sink;
        // None awaited before the next is issued: the calls race inside the sink.
        const before = Array.from({ length: 8 }, (_, i) => sink.output(`before ${i}`));
        const gate = sink.toolCall(gated());
        const after = Array.from({ length: 8 }, (_, i) => (i % 2 ? sink.output(`after ${i}`) : sink.usage(create(UsageSchema, { inputTokens: 1n }))));
        const also = [
          sink.toolCall(toolCall({ id: "c2", idempotencyKey: "k2" })),
          sink.model({ model: "m", messages: [userText("x")] }),
          sink.report(create(ToolResultSchema, { id: "r" })),
        ];
        settled.push(await Promise.allSettled([...before, gate, ...after, ...also]));
      },
    };
    const out = await liveTurn(fx, racer, scriptedModels(echoScript), [], { executionId: exe, tools: toolDeps(ex.executor) });
    expect(out).toMatchObject({ kind: "parked", gate: { toolCallId: "g1" } });
    const kinds = fx.kinds();
    const intent = kinds.indexOf("TOOL_CALL");
    expect(kinds.slice(intent)).toEqual(["TOOL_CALL", "APPROVAL_REQUEST"]);
    expect(kinds.filter((k) => k === "TOOL_CALL")).toHaveLength(1);
    const results = settled[0]!;
    const park = results[8]!;
    expect(park.status === "rejected" && park.reason).toBeInstanceOf(ApprovalParkedError);
    // Every call that did not commit before the intent failed with that same park error.
    const committed = kinds.filter((k) => k === "OUTPUT").length;
    expect(results.slice(0, committed).every((r) => r.status === "fulfilled")).toBe(true);
    for (const r of results.slice(committed)) expect(r.status === "rejected" && r.reason).toBe(park.status === "rejected" && park.reason);
    for (const late of [
      retained!.output("late"),
      retained!.toolCall(gated({ id: "g3", idempotencyKey: "k3" })),
      retained!.usage(create(UsageSchema, { inputTokens: 1n })),
    ]) {
      await expect(late).rejects.toBeInstanceOf(ApprovalParkedError);
    }
    expect(fx.kinds()).toEqual(kinds);
    expect(ex.calls).toHaveLength(0);
  });
});

/**
 * A journal whose appends can be made to fail: `fail` sees each batch and may refuse it (an append
 * result) or throw (a storage fault). Everything else reaches the real journal.
 */
function flakyLog(fx: ReturnType<typeof newLog>, fail: (events: readonly Event[]) => AppendResult | Error | undefined) {
  const log: TurnLog = {
    head: () => fx.log.head(),
    events: (from, to) => fx.log.events(from, to),
    append: (events, opts) => {
      const f = fail(events);
      if (f instanceof Error) throw f;
      return f ?? fx.log.append(events, opts);
    },
  };
  return log;
}

const isGateBatch = (events: readonly Event[]) => events.some((e) => e.kind === EventKind.EVENT_APPROVAL_REQUEST);

/** One model call, then the gated call; every later sink call is tried (errors swallowed) and kept. */
function gateAfterModel(seen: unknown[]): Harness {
  const attempt = async (f: () => Promise<unknown>) => {
    try {
      await f();
      seen.push("ok");
    } catch (e) {
      seen.push(e);
    }
  };
  return {
    describe: () => descriptor("h"),
    async run(_s, sink) {
      await sink.model({ model: "m", messages: [userText("hello")] });
      await attempt(() => sink.toolCall(gated()));
      await attempt(() => sink.output("carry on"));
      await attempt(() => sink.usage(create(UsageSchema, { inputTokens: 1n })));
      await attempt(() => sink.toolCall(toolCall({ id: "c9", idempotencyKey: "k9" })));
    },
  };
}

/** [START, INPUT, MODEL_CALL, OUTPUT]: a turn cut right before its gated call. */
async function cutBeforeGate() {
  const fx = newLog();
  await liveTurn(fx, gateAfterModel([]), scriptedModels(echoScript), ["hello"], { executionId: exe, tools: toolDeps(fakeExecutor().executor) });
  fx.truncateAfter(4);
  expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT"]);
  return fx;
}

function resumeOn(fx: ReturnType<typeof newLog>, log: TurnLog, h: Harness, ex: ReturnType<typeof fakeExecutor>, observed: string[]) {
  return resumeLatest(fx.events(), {
    sessionUid: uid,
    log,
    mintFence: () => fx.journal.mintFence(),
    describe: describer({ h }),
    defaultHarness: "h",
    models: scriptedModels(echoScript),
    observe: (records) => observed.push(...records.map((r) => EventKind[r.decoded.kind].replace(/^EVENT_/, ""))),
    signal: new AbortController().signal,
    tools: toolDeps(ex.executor),
  });
}

describe("the gate's own append", () => {
  // This host writes TOOL_CALL and APPROVAL_REQUEST in one transaction (tool-steps.ts `park`), so
  // a failed request append leaves no intent behind either: there is never a TOOL_CALL-only gate to
  // repair. What #112 and #113 ask of the repair is asked here of that append.
  it("resume: a request-append failure on a live tail is sticky and writes nothing of the gate; a fresh Resume then parks once (checklist §8.14 #113)", async () => {
    const fx = await cutBeforeGate();
    const fault = new Error("disk I/O error");
    let failures = 0;
    const log = flakyLog(fx, (events) => (isGateBatch(events) && failures++ === 0 ? fault : undefined));
    const ex = fakeExecutor();
    const seen: unknown[] = [];
    const observed: string[] = [];
    const out = await resumeOn(fx, log, gateAfterModel(seen), ex, observed);
    expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "failed", code: Code.Internal, message: "disk I/O error" } });
    // The failure stops every later sink call with that same cause, never a divergence.
    expect(seen).toHaveLength(4);
    for (const e of seen) expect(e).toBe(fault);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "ERROR"]);
    expect(observed).toEqual(["ERROR"]);
    expect(ex.calls).toHaveLength(0);

    // The gate is recoverable: a fresh Resume re-drives to it and parks with one intent and one request.
    const again: string[] = [];
    const parked = await resumeOn(fx, fx.log, gateAfterModel([]), ex, again);
    expect(parked).toMatchObject({ kind: "redriven", outcome: { kind: "parked", gate: { executionId: exe, toolCallId: "g1", requestSeq: 7n } } });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "ERROR", "TOOL_CALL", "APPROVAL_REQUEST"]);
    expect(again).toEqual(["TOOL_CALL", "APPROVAL_REQUEST"]);
    // Observed once: a repeat parks on the committed request without writing or observing anything.
    const repeat: string[] = [];
    expect(await resumeOn(fx, fx.log, gateAfterModel([]), ex, repeat)).toMatchObject({
      kind: "redriven",
      outcome: { kind: "parked", gate: { requestSeq: 7n } },
    });
    expect(repeat).toEqual([]);
    expect(fx.kinds()).toHaveLength(7);
    expect(ex.calls).toHaveLength(0);
    expect(fx.journal.verify().ok).toBe(true);
  });

  it("resume: the gate is appended under the recovery's own fence; a newer fence or a refused append stops it with that cause and writes no request (checklist §8.14 #112)", async () => {
    // A newer writer minted a fence after this recovery's: the gate append is fenced out.
    const fx = await cutBeforeGate();
    const ex = fakeExecutor();
    const seen: unknown[] = [];
    const observed: string[] = [];
    const newer = flakyLog(fx, (events) => {
      if (isGateBatch(events)) fx.journal.mintFence();
      return undefined;
    });
    const fenced = await resumeOn(fx, newer, gateAfterModel(seen), ex, observed);
    expect(fenced).toMatchObject({ kind: "redriven", outcome: { kind: "failed", code: Code.Aborted, stopped: { reason: "fenced" } } });
    expect(seen[0]).toMatchObject({ name: "AppendRefusedError", refusal: { reason: "fenced" } });
    for (const e of seen) expect(e).toBe(seen[0]);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT"]);
    expect(observed).toEqual([]);

    // A refusal of the append itself (here: too large) is that refusal, sticky, and nothing is written.
    const fx2 = await cutBeforeGate();
    const seen2: unknown[] = [];
    const observed2: string[] = [];
    const refusing = flakyLog(fx2, (events) =>
      isGateBatch(events) ? { ok: false, reason: "too_large", index: 1, bytes: 3_000_000, limit: 1_900_000 } : undefined,
    );
    const refused = await resumeOn(fx2, refusing, gateAfterModel(seen2), ex, observed2);
    expect(refused).toMatchObject({ kind: "redriven", outcome: { kind: "failed", code: Code.Aborted, stopped: { reason: "too_large" } } });
    expect(seen2[0]).toMatchObject({ name: "AppendRefusedError", refusal: { reason: "too_large" } });
    for (const e of seen2) expect(e).toBe(seen2[0]);
    expect(fx2.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT"]);
    expect(observed2).toEqual([]);
    expect(ex.calls).toHaveLength(0);
  });
});
