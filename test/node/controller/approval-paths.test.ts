/**
 * Approval gates in the controller, continued from tools.test.ts and approval-gates.test.ts
 * (docs/behaviour.md §4.11; checklist §8.14 #93, #104, #105, #107-111, #117-120): bad gate evidence,
 * sinks after a park and after Run, decided recovery in full, failures after the intent, refusals
 * before it, forged receipt fields, the effect-before-receipt crash, identity preconditions of a
 * decided gate, a failed park handoff, and gated call id reuse.
 *
 * This host has no InspectApproval and no preflight pass over gate correlation: a gate's evidence
 * is checked by the journal parse (kinds and order: an invalid log, nothing runs) and by the
 * recorded sink when the harness re-issues the gated call (correlation: a divergence before any
 * executor or model call, with only an ERROR appended by Resume and nothing by Replay).
 */
import { clone, create, type MessageInitShape } from "@bufbuild/protobuf";
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
  type ToolResult,
} from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { assistantText, userText } from "../../../proto/messages.js";
import type { EventSink, Harness, HarnessStart } from "../../../runtimes/harness-spi.js";
import { ApprovalParkedError, SinkClosedError, ToolCallRefusedError, ToolExecutionError } from "../../../objects/controller/errors.js";
import { endEvent } from "../../../objects/controller/events.js";
import type { DescribeHarness } from "../../../objects/controller/identity.js";
import { decisionOf } from "../../../objects/controller/tool-steps.js";
import type { TurnLog } from "../../../objects/controller/turn-writer.js";
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
type Fx = ReturnType<typeof newLog>;

const uid = SESSION_UID;
const exe = "exec-a";
const gated = (init: Partial<ToolCall> = {}) =>
  toolCall({ id: "g1", idempotencyKey: "kg", mediation: Mediation.REQUIRES_APPROVAL, args: { amount: 10 }, ...init });
const ev = (kind: EventKind, body?: Body, executionId = exe) => create(EventSchema, { executionId, kind, ...(body ? { body } : {}) });
const start = () => ev(EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { harness: "h", harnessVersion: "1", inputCount: 0n } });
const callEv = (c: ToolCall) => ev(EventKind.EVENT_TOOL_CALL, { case: "tool", value: c });
const requestEv = (toolCallId = "g1") => ev(EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId } });
const decisionEv = (approved: boolean, requestSeq = 3n, toolCallId = "g1") =>
  ev(EventKind.EVENT_APPROVAL_RESULT, { case: "approvalResult", value: { toolCallId, approved, reason: approved ? "" : "no", requestSeq } });
const receiptEv = (init: MessageInitShape<typeof ToolResultSchema>) =>
  ev(EventKind.EVENT_TOOL_RESULT, { case: "result", value: create(ToolResultSchema, { id: "g1", approvalRequestSeq: 3n, approvalDecisionSeq: 4n, ...init }) });

interface ResumeExtra {
  ex?: ReturnType<typeof fakeExecutor>;
  models?: ReturnType<typeof scriptedModels>;
  log?: TurnLog;
  describe?: DescribeHarness;
  tools?: Partial<ReturnType<typeof toolDeps>>;
  sessionUid?: string;
}

function resume(fx: Fx, h: Harness, o: ResumeExtra = {}) {
  const sessionUid = o.sessionUid ?? uid;
  return resumeLog(fx, h, {
    sessionUid,
    log: o.log ?? fx.log,
    describe: o.describe ?? describer({ h }),
    models: o.models ?? scriptedModels(echoScript),
    tools: toolDeps((o.ex ?? fakeExecutor()).executor, { sessionUid, ...o.tools }),
  });
}

/** START, TC g1, AR g1 (request at seq 3) for execution exec-a, written by a live park. */
async function parkedLog(fx = newLog(), sessionUid = uid) {
  expect(
    await liveTurn(fx, toolHarness([gated()]), scriptedModels(echoScript), [], { executionId: exe, tools: toolDeps(fakeExecutor().executor, { sessionUid }) }),
  ).toMatchObject({ kind: "parked" });
  return fx;
}

/** A log whose appends can be made to fail (throw a storage fault) per batch. */
function flakyLog(fx: Fx, fail: (events: readonly Event[]) => Error | undefined): TurnLog {
  return {
    head: () => fx.log.head(),
    events: (from, to) => fx.log.events(from, to),
    append: (events, opts) => {
      const f = fail(events);
      if (f) throw f;
      return fx.log.append(events, opts);
    },
  };
}

const has = (kind: EventKind) => (events: readonly Event[]) => events.some((e) => e.kind === kind);

/** Calls every sink method `n` times at once (none awaited before the next) and settles them. */
function everyMethod(sink: EventSink, n = 1): Promise<PromiseSettledResult<unknown>[]> {
  const calls: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    calls.push(
      sink.model({ model: "m", messages: [userText(`more ${i}`)] }),
      sink.output(`out ${i}`),
      sink.toolCall(toolCall({ id: `c${i}`, idempotencyKey: `k${i}` })),
      sink.toolCall(gated({ id: `g-late-${i}`, idempotencyKey: `kl${i}` })),
      sink.report(create(ToolResultSchema, { id: `r${i}` })),
      sink.usage(create(UsageSchema, { inputTokens: 1n })),
    );
  }
  return Promise.allSettled(calls);
}

const rejectedWith = (results: PromiseSettledResult<unknown>[]) => results.map((r) => (r.status === "rejected" ? r.reason : "fulfilled"));

describe("bad gate evidence (checklist §8.14 #93, #117)", () => {
  // Records after [START]; the harness re-issues exactly gated() (or `call`). Each case says whether
  // the journal parse refuses it ("invalid": nothing runs or is written) or the gate's correlation
  // does ("diverged": Resume appends only ERROR, Replay writes nothing; no executor or model call).
  const cases: [string, Event[], "invalid" | "diverged" | RegExp, ToolCall?][] = [
    ["a gated call without an execution id", [ev(EventKind.EVENT_TOOL_CALL, { case: "tool", value: gated() }, ""), requestEv()], "invalid"],
    [
      "a request without an execution id",
      [callEv(gated()), ev(EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: "g1" } }, "")],
      "invalid",
    ],
    ["a decided gated call with an empty call id", [callEv(gated({ id: "" })), requestEv(""), decisionEv(true, 3n, "")], "invalid", gated({ id: "" })],
    ["a gated call without a key", [callEv(gated({ idempotencyKey: "" })), requestEv(), decisionEv(true)], "diverged", gated({ idempotencyKey: "" })],
    [
      "a request after an ordinary (not gated) call",
      [callEv(gated({ mediation: Mediation.CONTROLLER_MEDIATED })), requestEv(), decisionEv(true)],
      "invalid",
      gated({ mediation: Mediation.CONTROLLER_MEDIATED }),
    ],
    ["a request with no call", [requestEv(), decisionEv(true, 2n)], "invalid"],
    ["a decision with no request", [callEv(gated()), decisionEv(true, 2n)], "invalid"],
    ["a duplicate call", [callEv(gated()), callEv(gated()), requestEv()], "invalid"],
    ["a duplicate request", [callEv(gated()), requestEv(), requestEv()], "invalid"],
    ["a duplicate decision", [callEv(gated()), requestEv(), decisionEv(true), decisionEv(true)], "invalid"],
    ["a duplicate receipt", [callEv(gated()), requestEv(), decisionEv(true), receiptEv({}), receiptEv({})], "invalid"],
    ["a call without its payload", [ev(EventKind.EVENT_TOOL_CALL), requestEv()], "invalid"],
    ["a request without its payload", [callEv(gated()), ev(EventKind.EVENT_APPROVAL_REQUEST), decisionEv(true)], "diverged"],
    ["a decision without its payload", [callEv(gated()), requestEv(), ev(EventKind.EVENT_APPROVAL_RESULT)], "diverged"],
    ["a receipt without its payload", [callEv(gated()), requestEv(), decisionEv(true), ev(EventKind.EVENT_TOOL_RESULT)], "diverged"],
    ["a request naming another call", [callEv(gated()), requestEv("g2"), decisionEv(true, 3n, "g2")], "diverged"],
    ["a decision naming another call", [callEv(gated()), requestEv(), decisionEv(true, 3n, "g2")], "diverged"],
    ["a receipt naming another call", [callEv(gated()), requestEv(), decisionEv(true), receiptEv({ id: "g2" })], "diverged"],
    ["a decision with a zero request seq", [callEv(gated()), requestEv(), decisionEv(true, 0n)], "diverged"],
    ["a decision with a wrong request seq", [callEv(gated()), requestEv(), decisionEv(true, 2n)], "diverged"],
    ["a receipt with a zero request seq", [callEv(gated()), requestEv(), decisionEv(true), receiptEv({ approvalRequestSeq: 0n })], "diverged"],
    ["a receipt with a wrong request seq", [callEv(gated()), requestEv(), decisionEv(true), receiptEv({ approvalRequestSeq: 2n })], "diverged"],
    ["a receipt with a zero decision seq", [callEv(gated()), requestEv(), decisionEv(true), receiptEv({ approvalDecisionSeq: 0n })], "diverged"],
    ["a receipt with a wrong decision seq", [callEv(gated()), requestEv(), decisionEv(true), receiptEv({ approvalDecisionSeq: 3n })], "diverged"],
    [
      "an approved receipt marked denied",
      [callEv(gated()), requestEv(), decisionEv(true), receiptEv({ code: ToolResult_Code.APPROVAL_DENIED, isError: true })],
      "diverged",
    ],
    ["a denied receipt that ran", [callEv(gated()), requestEv(), decisionEv(false), receiptEv({ code: ToolResult_Code.CODE_UNSPECIFIED })], "diverged"],
  ];
  for (const [name, evidence, expected, call = gated()] of cases) {
    it(`resume, replay: ${name} fails before any executor or model call (checklist §8.14 #93 #117)`, async () => {
      const fx = newLog();
      append(fx, [start(), ...evidence]);
      const before = fx.kinds();
      const ex = fakeExecutor();
      const models = scriptedModels(echoScript);
      const out = await resume(fx, toolHarness([call]), { ex, models });
      if (expected === "invalid") {
        expect(out).toMatchObject({ kind: "invalid", incomplete: false });
        expect(fx.kinds()).toEqual(before);
      } else if (expected === "diverged" && out.kind === "diverged") {
        // Caught by the gate preflight (checklist §8.14 #117): nothing ran, nothing was appended.
        expect(out.detail).toMatch(/^replay diverged at seq [1-9]/);
        expect(fx.kinds()).toEqual(before);
      } else {
        const message = expected === "diverged" ? expect.stringMatching(/^replay diverged at seq [1-9]/) : expect.stringMatching(expected);
        expect(out).toMatchObject({
          kind: "redriven",
          outcome: { kind: "failed", code: expected === "diverged" ? Code.FailedPrecondition : Code.Internal, message },
        });
        expect(fx.kinds()).toEqual([...before, "ERROR"]);
      }
      // As a completed execution, replay fails the same way and writes nothing.
      const done = newLog();
      append(done, [start(), ...evidence, ev(EventKind.EVENT_OUTPUT, { case: "message", value: assistantText("t:ok:0") }), endEvent(exe, "COMPLETED")]);
      const head = done.journal.head();
      const r = await replay(done, toolHarness([call]), models);
      expect(r).toMatchObject({ ok: false, modelCalls: 0 });
      // (A completed execution cannot end inside a gate: where the evidence stops mid-gate, the
      // appended OUTPUT continues past it and the parse refuses the log before correlation.)
      expect(r.divergence).toMatch(expected === "invalid" ? /^invalid execution log/ : /^(replay diverged|invalid execution log: .*unresolved approval gate)/);
      expect(done.journal.head()).toEqual(head);
      expect(ex.calls).toHaveLength(0);
      expect(models.calls).toBe(0);
    });
  }
});

describe("a gate without a call id (checklist §8.14 #93)", () => {
  // A complete gate whose call, request, decision and receipt all carry an empty call id (this
  // host never writes one: live refuses it before the intent) is an invalid log to the parser
  // (execution-log.ts `stepGate`), so replay refuses it and Resume neither parks nor runs.
  it("replay: a completed gate whose call id is empty is refused (checklist §8.14 #93)", async () => {
    const fx = newLog();
    const call = gated({ id: "" });
    append(fx, [
      start(),
      callEv(call),
      requestEv(""),
      decisionEv(true, 3n, ""),
      receiptEv({ id: "" }),
      ev(EventKind.EVENT_OUTPUT, { case: "message", value: assistantText("t:ok:0") }),
      endEvent(exe, "COMPLETED"),
    ]);
    expect(await replay(fx, toolHarness([call]))).toMatchObject({ ok: false });
  });
});

describe("gate correlation before Run (checklist §8.14 #117)", () => {
  // objects/controller/gate-preflight.ts checks the re-driven execution's gates before a fence is
  // minted or the harness runs: a corrupt correlation diverges with nothing run or appended.
  it("resume: a decision naming the wrong request seq is refused before the harness runs; nothing is appended (checklist §8.14 #117)", async () => {
    const fx = newLog();
    append(fx, [start(), callEv(gated()), requestEv(), decisionEv(true, 2n)]);
    const before = fx.kinds();
    let ran = false;
    const h: Harness = { describe: () => descriptor("h"), run: async (s, sink) => void ((ran = true), await toolHarness([gated()]).run(s, sink)) };
    const out = await resume(fx, h);
    expect(fx.kinds()).toEqual(before);
    expect(ran).toBe(false);
    expect(out.kind).not.toBe("redriven");
  });
});

describe("the sink after a park (checklist §8.14 #104)", () => {
  for (const path of ["exec", "resume tail", "resume at the request"] as const) {
    it(`${path}: after a swallowed park every sink method, called concurrently and after Run returns, fails with the park error and writes nothing (checklist §8.14 #104)`, async () => {
      const fx = path === "exec" ? newLog() : await parkedLog();
      let retained: EventSink | undefined;
      let during: PromiseSettledResult<unknown>[] = [];
      let park: unknown;
      const h: Harness = {
        describe: () => descriptor("h"),
        async run(_s, sink) {
          retained = sink;
          park = await sink.toolCall(gated()).catch((e: unknown) => e);
          during = await everyMethod(sink, 4);
        },
      };
      const ex = fakeExecutor();
      const models = scriptedModels(echoScript);
      if (path === "resume tail") {
        // A completed ungated turn first: the gate is this resume's live tail of a new execution cut at START.
        fx.truncateAfter(1);
      }
      const out = path === "exec" ? await liveTurn(fx, h, models, [], { executionId: exe, tools: toolDeps(ex.executor) }) : await resume(fx, h, { ex, models });
      const outcome = path === "exec" ? out : (out as { outcome: unknown }).outcome;
      expect(outcome).toMatchObject({ kind: "parked", gate: { toolCallId: "g1", requestSeq: 3n } });
      expect(park).toBeInstanceOf(ApprovalParkedError);
      expect(during).toHaveLength(24);
      for (const r of rejectedWith(during)) expect(r).toBe(park);
      const kinds = fx.kinds();
      expect(kinds).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST"]);
      for (const r of rejectedWith(await everyMethod(retained!, 2))) expect(r).toBe(park);
      expect(fx.kinds()).toEqual(kinds);
      expect(ex.calls).toHaveLength(0);
      expect(models.calls).toBe(0);
    });
  }
});

describe("the sink after Run (checklist §8.14 #105)", () => {
  for (const path of ["exec", "resume", "replay"] as const) {
    it(`${path}: after a normal completion every method of a retained sink fails with SinkClosedError and writes nothing (checklist §8.14 #105)`, async () => {
      const fx = newLog();
      let retained: EventSink | undefined;
      const h: Harness = {
        describe: () => descriptor("h"),
        async run(_s, sink) {
          retained = sink;
          await sink.model({ model: "m", messages: [userText("hi")] });
        },
      };
      const models = scriptedModels(echoScript);
      expect(await liveTurn(fx, h, models, ["hi"], { executionId: exe, tools: toolDeps(fakeExecutor().executor) })).toEqual({ kind: "completed" });
      if (path === "resume") {
        fx.truncateAfter(4);
        expect(await resume(fx, h, { models })).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
      }
      if (path === "replay") expect(await replay(fx, h, models)).toMatchObject({ ok: true });
      const kinds = fx.kinds();
      const calls = models.calls;
      const results = rejectedWith(await everyMethod(retained!, 3));
      expect(results).toHaveLength(18);
      for (const r of results) expect(r).toBeInstanceOf(SinkClosedError);
      expect(fx.kinds()).toEqual(kinds);
      expect(models.calls).toBe(calls);
    });
  }
});

describe("decided recovery (checklist §8.14 #107)", () => {
  const variants: [string, boolean, ((c: ToolCall) => ToolResult | Error) | undefined, ToolResult_Code, boolean][] = [
    ["approved", true, undefined, ToolResult_Code.CODE_UNSPECIFIED, false],
    ["denied", false, undefined, ToolResult_Code.APPROVAL_DENIED, true],
    ["approved, the executor fails", true, () => new ToolExecutionError("executor down"), ToolResult_Code.EXECUTOR_ERROR, true],
    [
      "approved, the executor answers an error result",
      true,
      () => create(ToolResultSchema, { isError: true, error: "insufficient funds" }),
      ToolResult_Code.EXECUTOR_ERROR,
      true,
    ],
  ];
  for (const [name, approved, behave, code, isError] of variants) {
    it(`resume, replay: ${name}: Start carries the recorded values and session uid; the receipt is durable before the harness sees it; replay serves equal copies whose mutation changes nothing (checklist §8.14 #107)`, async () => {
      const fx = newLog();
      const config = new Uint8Array([9, 8, 7]);
      const starts: HarnessStart[] = [];
      const got: { receipt: ToolResult; decision: unknown; journaled: string[] }[] = [];
      const h: Harness = {
        describe: () => descriptor("h"),
        async run(s, sink) {
          starts.push({ ...s, config: s.config.slice() });
          const receipt = await sink.toolCall(gated());
          got.push({ receipt: clone(ToolResultSchema, receipt), decision: structuredClone(decisionOf(receipt)), journaled: fx.kinds() });
          // The harness mutates what it was served.
          receipt.id = "mutated";
          receipt.content = [];
          const d = decisionOf(receipt);
          if (d) d.approved = !d.approved;
          await sink.output(receipt.isError ? "error" : "ok");
        },
      };
      expect(
        await liveTurn(fx, h, scriptedModels(echoScript), [], { executionId: exe, config, cursor: 17n, tools: toolDeps(fakeExecutor().executor) }),
      ).toMatchObject({ kind: "parked" });
      append(fx, [decisionEv(approved)]);
      const ex = fakeExecutor(behave);
      starts.length = 0;
      const out = await resume(fx, h, { ex });
      expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
      expect(starts[0]).toMatchObject({ sessionUid: uid, executionId: exe, resumeFromSeq: 17n, config });
      expect(ex.calls).toHaveLength(approved ? 1 : 0);
      if (approved) expect(ex.calls[0]).toMatchObject({ sessionUid: uid, executionId: exe, call: { id: "g1", idempotencyKey: "kg", args: { amount: 10 } } });
      expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT", "OUTPUT", "END"]);
      // The decorated decision reached the harness only after the receipt was durable.
      expect(got[0]!.journaled).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT"]);
      expect(got[0]!.decision).toMatchObject({ toolCallId: "g1", approved, requestSeq: 3n });
      const stored = fx.events()[4]!.event.body;
      expect(stored.case).toBe("result");
      const receipt = stored.case === "result" ? stored.value : undefined;
      expect(receipt).toMatchObject({ id: "g1", code, isError, approvalRequestSeq: 3n, approvalDecisionSeq: 4n });
      if (!approved) expect(receipt!.content.length).toBeGreaterThan(0);
      const bytes = fx.events().map((e) => e.event);

      // Replay serves an equal receipt and decision, writes nothing, never calls the executor.
      const replayed: { receipt: ToolResult; decision: unknown }[] = [];
      const again: Harness = {
        describe: () => descriptor("h"),
        async run(s, sink) {
          const r = await sink.toolCall(gated());
          replayed.push({ receipt: clone(ToolResultSchema, r), decision: structuredClone(decisionOf(r)) });
          r.id = "mutated";
          r.content = [];
          const d = decisionOf(r);
          if (d) d.approved = !d.approved;
          await sink.output(r.isError ? "error" : "ok");
          void s;
        },
      };
      const head = fx.journal.head();
      for (let i = 0; i < 2; i++) expect(await replay(fx, again)).toMatchObject({ ok: true, modelCalls: 0 });
      expect(fx.journal.head()).toEqual(head);
      expect(fx.events().map((e) => e.event)).toEqual(bytes);
      expect(replayed[0]!.receipt).toEqual(receipt);
      expect(replayed[1]!.receipt).toEqual(receipt);
      expect(replayed[0]!.decision).toMatchObject({ toolCallId: "g1", approved, requestSeq: 3n });
      expect(replayed[1]!.decision).toEqual(replayed[0]!.decision);
      expect(ex.calls).toHaveLength(approved ? 1 : 0);
      expect(fx.journal.verify().ok).toBe(true);
    });
  }
});

/** Re-issues the gated call, then tries (swallowing errors) every other kind of call; keeps what each got. */
function persistent(seen: unknown[], first: ToolCall = gated()): Harness {
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
      await attempt(() => sink.toolCall(first));
      await attempt(() => sink.output("carry on"));
      await attempt(() => sink.usage(create(UsageSchema, { inputTokens: 1n })));
      await attempt(() => sink.toolCall(toolCall({ id: "c9", idempotencyKey: "k9" })));
      await attempt(() => sink.model({ model: "m", messages: [userText("x")] }));
    },
  };
}

describe("failures after the intent (checklist §8.14 #108)", () => {
  it("exec: a request-append failure stops every later sink call with that cause, writes nothing of the gate and leaves it recoverable (checklist §8.14 #108)", async () => {
    const fx = newLog();
    const fault = new Error("disk I/O error");
    const log = flakyLog(fx, (events) => (has(EventKind.EVENT_APPROVAL_REQUEST)(events) ? fault : undefined));
    const seen: unknown[] = [];
    const ex = fakeExecutor();
    const models = scriptedModels(echoScript);
    const out = await liveTurn({ log } as Fx, persistent(seen), models, [], { executionId: exe, tools: toolDeps(ex.executor) });
    expect(out).toMatchObject({ kind: "failed", code: Code.Internal, message: "disk I/O error" });
    expect(seen).toHaveLength(5);
    for (const e of seen) expect(e).toBe(fault);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
    expect(ex.calls).toHaveLength(0);
    expect(models.calls).toBe(0);
    // Recoverable: a Resume re-drives to the gate and parks on it.
    const r = await resume(fx, toolHarness([gated()]), { ex });
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "parked", gate: { toolCallId: "g1", requestSeq: 4n } } });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "ERROR", "TOOL_CALL", "APPROVAL_REQUEST"]);
  });

  it("resume: a receipt-append failure stops every later sink call with that cause, writes no receipt or continuation and leaves the gate recoverable (checklist §8.14 #108)", async () => {
    const fx = await parkedLog();
    append(fx, [decisionEv(true)]);
    const fault = new Error("database is locked");
    const log = flakyLog(fx, (events) => (has(EventKind.EVENT_TOOL_RESULT)(events) ? fault : undefined));
    const seen: unknown[] = [];
    const ex = fakeExecutor();
    const models = scriptedModels(echoScript);
    const out = await resume(fx, persistent(seen), { ex, models, log });
    expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "failed", code: Code.Internal, message: "database is locked" } });
    expect(seen).toHaveLength(5);
    for (const e of seen) expect(e).toBe(fault);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "ERROR"]);
    expect(ex.calls).toHaveLength(1);
    expect(models.calls).toBe(0);
    // Recoverable: the next Resume writes the receipt (the executor dedups the repeated call).
    const r = await resume(fx, toolHarness([gated()]), { ex });
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "ERROR", "TOOL_RESULT", "OUTPUT", "END"]);
    expect(ex.effects.size).toBe(1);
  });
});

describe("before the intent (checklist §8.14 #109)", () => {
  it("exec, resume tail: a gated call with an empty key is refused as a missing key; no TOOL_CALL or request is written (checklist §8.14 #109)", async () => {
    const keyless = gated({ idempotencyKey: "" });
    const fx = newLog();
    const ex = fakeExecutor();
    const seen: unknown[] = [];
    expect(await liveTurn(fx, persistent(seen, keyless), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) })).toMatchObject({
      kind: "failed",
      code: Code.Internal,
    });
    expect(seen[0]).toMatchObject({ name: "ToolCallRefusedError", kind: "missing_key" });
    for (const later of seen.slice(1)) expect(later).toBe(seen[0]);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
    // The same on a resume's live tail (an execution cut right after its START).
    const cut = newLog();
    append(cut, [start()]);
    const seen2: unknown[] = [];
    expect(await resume(cut, persistent(seen2, keyless), { ex })).toMatchObject({ kind: "redriven", outcome: { kind: "failed", code: Code.Internal } });
    expect(seen2[0]).toMatchObject({ name: "ToolCallRefusedError", kind: "missing_key" });
    expect(cut.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
    expect(ex.calls).toHaveLength(0);
  });
});

describe("forged receipt fields (checklist §8.14 #110)", () => {
  // ToolResult carries no decision of its own here (the decision is the APPROVAL_RESULT record,
  // handed to a harness beside the receipt, never inside it): the host-owned fields are the code
  // and the two seqs.
  const forged: [string, MessageInitShape<typeof ToolResultSchema>][] = [
    ["a request seq", { approvalRequestSeq: 3n }],
    ["a decision seq", { approvalDecisionSeq: 4n }],
    ["both seqs", { approvalRequestSeq: 3n, approvalDecisionSeq: 4n }],
    ["the denied code", { code: ToolResult_Code.APPROVAL_DENIED, isError: true }],
  ];
  for (const [name, fields] of forged) {
    it(`exec, resume tail: a report carrying ${name} is refused; no TOOL_RESULT is committed (checklist §8.14 #110)`, async () => {
      const seen: unknown[] = [];
      const forger: Harness = {
        describe: () => descriptor("h"),
        async run(_s, sink) {
          await sink.report(create(ToolResultSchema, { id: "x", ...fields })).catch((e: unknown) => void seen.push(e));
          await sink.report(create(ToolResultSchema, { id: "y" })).catch((e: unknown) => void seen.push(e));
        },
      };
      const fx = newLog();
      expect(await liveTurn(fx, forger, scriptedModels(echoScript), [])).toMatchObject({
        kind: "failed",
        message: expect.stringMatching(/approval receipt fields/),
      });
      expect(fx.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
      expect(seen).toHaveLength(2);
      expect(seen[0]).toBeInstanceOf(ToolCallRefusedError);
      expect(seen[1]).toBe(seen[0]);
      const cut = newLog();
      append(cut, [start()]);
      seen.length = 0;
      expect(await resume(cut, forger)).toMatchObject({
        kind: "redriven",
        outcome: { kind: "failed", message: expect.stringMatching(/approval receipt fields/) },
      });
      expect(cut.kinds()).toEqual(["EXECUTION_START", "ERROR"]);
    });
  }
});

describe("effect before receipt (checklist §8.14 #111)", () => {
  it("resume: a crash between an approved gate's effect and its receipt re-invokes the executor, whose (session, key) dedup keeps one effect; replay does not invoke it; another session's same key is its own effect (checklist §8.14 #111)", async () => {
    const fx = await parkedLog();
    append(fx, [decisionEv(true)]);
    // The executor's own store, durable across its restarts: one effect per (session, key).
    const ex = fakeExecutor();
    const crash = new Error("the host died before the receipt was written");
    const first = await resume(fx, toolHarness([gated()]), {
      ex,
      log: flakyLog(fx, (events) => (has(EventKind.EVENT_TOOL_RESULT)(events) ? crash : undefined)),
    });
    expect(first).toMatchObject({ kind: "redriven", outcome: { kind: "failed" } });
    expect(fx.kinds()).not.toContain("TOOL_RESULT");
    expect(ex.effects.size).toBe(1);
    const second = await resume(fx, toolHarness([gated()]), { ex });
    expect(second).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(ex.calls.map((c) => `${c.sessionUid}/${c.call.idempotencyKey}`)).toEqual([`${uid}/kg`, `${uid}/kg`]);
    expect(ex.effects.size).toBe(1);
    expect(fx.events().filter((e) => e.event.kind === EventKind.EVENT_TOOL_RESULT)).toHaveLength(1);
    expect(await replay(fx, toolHarness([gated()]))).toMatchObject({ ok: true });
    expect(ex.calls).toHaveLength(2);

    // The same execution id, call id and key in another session is a distinct effect.
    const other = "sess-000000000000000000000002";
    const fx2 = await parkedLog(newLog(), other);
    append(fx2, [decisionEv(true)]);
    expect(await resume(fx2, toolHarness([gated()]), { ex, sessionUid: other })).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(ex.calls.at(-1)).toMatchObject({ sessionUid: other, call: { idempotencyKey: "kg" } });
    expect(ex.effects.size).toBe(2);
  });
});

describe("decided-gate preconditions (checklist §8.14 #118)", () => {
  it("resume: the recorded harness is described once per recovery, also when the gate completes (checklist §8.14 #118)", async () => {
    const fx = await parkedLog();
    append(fx, [decisionEv(true)]);
    const names: string[] = [];
    const inner = describer({ h: toolHarness([gated()]) });
    const ex = fakeExecutor();
    expect(await resume(fx, toolHarness([gated()]), { ex, describe: (n) => (names.push(n), inner(n)) })).toMatchObject({
      kind: "redriven",
      outcome: { kind: "completed" },
    });
    expect(names).toEqual(["h"]);
  });

  it("resume: a decided gate on a memory-snapshot harness is refused as approval-unavailable; the executor never runs and nothing continues (checklist §8.14 #118)", async () => {
    const fx = await parkedLog();
    append(fx, [decisionEv(true)]);
    const seen: unknown[] = [];
    const memory: Harness = { ...persistent(seen), describe: () => descriptor("h", "1", Resumability.REQUIRES_MEMORY_SNAPSHOT) };
    const ex = fakeExecutor();
    const models = scriptedModels(echoScript);
    const out = await resume(fx, memory, { ex, models });
    expect(out).toMatchObject({ kind: "redriven", outcome: { kind: "failed" } });
    expect(seen[0]).toMatchObject({ name: "ToolCallRefusedError", kind: "approval_unavailable" });
    for (const later of seen.slice(1)) expect(later).toBe(seen[0]);
    expect(ex.calls).toHaveLength(0);
    expect(models.calls).toBe(0);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "ERROR"]);
  });
});

describe("a failed park handoff (checklist §8.14 #119)", () => {
  /** Parks, then fails the handoff with an error of its own. */
  const fumbling: Harness = {
    describe: () => descriptor("h"),
    async run(_s, sink) {
      await sink.toolCall(gated()).catch(() => undefined);
      throw new Error("the harness could not hand the park back");
    },
  };
  it("exec, resume: a different error after the park writes nothing terminal, and a later Resume still parks without writing (checklist §8.14 #119)", async () => {
    const fx = newLog();
    const ex = fakeExecutor();
    expect(await liveTurn(fx, fumbling, scriptedModels(echoScript), [], { executionId: exe, tools: toolDeps(ex.executor) })).toMatchObject({
      kind: "parked",
      gate: { toolCallId: "g1", requestSeq: 3n },
    });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST"]);
    // A recovery whose harness fumbles the handoff again: still parked, still nothing written.
    expect(await resume(fx, fumbling, { ex })).toMatchObject({ kind: "redriven", outcome: { kind: "parked", gate: { toolCallId: "g1", requestSeq: 3n } } });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST"]);
    expect(await resume(fx, toolHarness([gated()]), { ex })).toMatchObject({
      kind: "redriven",
      outcome: { kind: "parked", gate: { toolCallId: "g1", requestSeq: 3n } },
    });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST"]);
    expect(ex.calls).toHaveLength(0);
  });
});

describe("gated call id reuse (checklist §8.14 #120)", () => {
  it("resume tail: a gated call reusing an earlier gated id, or an earlier ordinary id, is refused; exactly one TOOL_CALL has that id (checklist §8.14 #120)", async () => {
    // Gated twice: g1 was decided and received; the live tail re-gates g1.
    const fx = await parkedLog();
    append(fx, [decisionEv(false)]);
    const twice = toolHarness([gated(), gated({ idempotencyKey: "kg2" })]);
    const ex = fakeExecutor();
    const out = await resume(fx, twice, { ex });
    expect(out).toMatchObject({
      kind: "redriven",
      outcome: { kind: "failed", code: Code.Internal, message: expect.stringMatching(/approval-gated call needs an id not used earlier/) },
    });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT", "ERROR"]);
    const ids = (f: Fx) => f.events().flatMap((e) => (e.event.body.case === "tool" ? [e.event.body.value.id] : []));
    expect(ids(fx)).toEqual(["g1"]);

    // Ordinary then gated: c1 is in the recorded prefix; the live tail gates c1.
    const fx2 = newLog();
    const mixed = toolHarness([toolCall({ id: "c1" }), gated({ id: "c1", idempotencyKey: "kc" })]);
    expect(await liveTurn(fx2, toolHarness([toolCall({ id: "c1" })]), scriptedModels(echoScript), [], { tools: toolDeps(ex.executor) })).toEqual({
      kind: "completed",
    });
    fx2.truncateAfter(3); // [START, TOOL_CALL c1, TOOL_RESULT]
    const out2 = await resume(fx2, mixed, { ex });
    expect(out2).toMatchObject({
      kind: "redriven",
      outcome: { kind: "failed", code: Code.Internal, message: expect.stringMatching(/approval-gated call needs an id not used earlier/) },
    });
    expect(fx2.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_RESULT", "ERROR"]);
    expect(ids(fx2)).toEqual(["c1"]);
  });
});
