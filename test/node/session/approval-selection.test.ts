/**
 * Which gate Approve acts on, and when it refuses (docs/behaviour.md §4.11; checklist §8.14 #91, #92,
 * #94, #98, #99, #101, #121). This host has no InspectApproval: a gate is "inspected" by Approve's
 * validation (objects/session/approvals.ts), by the session's pending_approval projection, and by
 * Resume. Journals the API cannot produce (a newer execution after an open gate, records past an
 * unresolved gate, late records of an old execution, bad input counts) are written through the
 * session's own append path, the one its turns use, so the projections stay consistent with them.
 */
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, IdentityRefSchema, Mediation, ToolResult_Code, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import { endEvent, errorEvent, inputEvent, lifecycleEvent, Lifecycle_Kind } from "../../../objects/controller/events.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import {
  echoScript,
  fakeExecutor,
  liveTurn,
  modelHarness,
  scriptedModels,
  toolCall,
  toolDeps,
  toolHarness,
  type newLog,
} from "../support/controller-fixture.js";
import { createSession, drain, execReq, setup, sessionOf as session, inject, stateOf } from "../support/session-fixture.js";

type Body = MessageInitShape<typeof EventSchema>["body"];

const config = (calls: unknown[]) => new TextEncoder().encode(JSON.stringify({ calls }));
const gatedCall = (id: string) => ({ id, tool: "pay", args: { amount: 10 }, mediation: "REQUIRES_APPROVAL" });
const gated = (id = "g1", key = "kg") => toolCall({ id, idempotencyKey: key, mediation: Mediation.REQUIRES_APPROVAL, args: { amount: 10 } });

/** The session's journal as the controller's turns see it (appends go through the projections). */
const turnLogOf = (host: SessionHost) => ({ log: stateOf(host).turnLog() }) as unknown as ReturnType<typeof newLog>;

function journal(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => ({ seq: x.seq, event: fromBinary(EventSchema, x.event) }));
}

const ev = (executionId: string, kind: EventKind, body: Body) => create(EventSchema, { executionId, kind, body });

/** A session whose journal holds one execution parked on gate g1 (START, TC, AR: request at seq 3). */
async function injectedPark(executionId = "exec-a") {
  const ex = fakeExecutor();
  const fx = setup({ h: toolHarness([gated()]), tools: toolsHarness }, undefined, { tools: ex.executor });
  await createSession(fx.host, "h");
  const out = await liveTurn(turnLogOf(fx.host), toolHarness([gated()]), scriptedModels(echoScript), [], { executionId, tools: toolDeps(ex.executor) });
  expect(out).toMatchObject({ kind: "parked", gate: { executionId, toolCallId: "g1", requestSeq: 3n } });
  return { ...fx, ex, executionId };
}

function approve(host: SessionHost, executionId: string, toolCallId: string, requestSeq: bigint, approved = true, extra: Record<string, unknown> = {}) {
  return host.approve({ executionId, toolCallId, requestSeq, approved, reason: approved ? "ok" : "no", ...extra });
}

describe("gate selection", () => {
  it("approve: a newer ungated execution leaves no pending gate and the superseded request cannot be approved (checklist §8.14 #91)", async () => {
    // The API way: Cancel closes the parked turn, a new ungated turn completes.
    const fx = setup({ tools: toolsHarness }, undefined, { tools: fakeExecutor().executor });
    await createSession(fx.host, "tools");
    await drain(fx.host.exec(execReq({ inputs: [userText("pay")], config: config([gatedCall("g1")]) })));
    const old = session(fx.host).pendingApproval!;
    expect(old).toMatchObject({ toolCallId: "g1", requestSeq: 4n });
    expect(await fx.host.cancel(old.executionId, "USER")).toMatchObject({ ok: true });
    expect((await drain(fx.host.exec(execReq({ inputs: [userText("next")], harness: "echo" })))).failure).toBeUndefined();
    expect(session(fx.host).execState).toBe(ExecState.EXEC_COMPLETED);
    expect(session(fx.host).pendingApproval).toBeUndefined();
    const before = journal(fx.host).length;
    const fence = stateOf(fx.host).journal.fence();
    expect(approve(fx.host, old.executionId, "g1", 4n)).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(journal(fx.host)).toHaveLength(before);
    expect(stateOf(fx.host).journal.fence()).toBe(fence);

    // A journal where the newer execution simply follows the open gate (no END for it).
    const p = await injectedPark();
    expect(await liveTurn(turnLogOf(p.host), modelHarness("h"), scriptedModels(echoScript), ["later"], { executionId: "exec-b" })).toEqual({
      kind: "completed",
    });
    expect(session(p.host).pendingApproval).toBeUndefined();
    const n = journal(p.host).length;
    expect(approve(p.host, "exec-a", "g1", 3n)).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(journal(p.host)).toHaveLength(n);
  });

  it("approve: with sequential gates the latest unresolved one is pending; an identical retry of the older decision returns its original record (checklist §8.14 #92)", async () => {
    const ex = fakeExecutor();
    const fx = setup({ tools: toolsHarness }, undefined, { tools: ex.executor });
    await createSession(fx.host, "tools");
    await drain(fx.host.exec(execReq({ inputs: [userText("pay")], config: config([gatedCall("g1"), gatedCall("g2"), gatedCall("g3")]) })));
    const first = session(fx.host).pendingApproval!;
    expect(first).toMatchObject({ toolCallId: "g1", requestSeq: 4n });
    const d1 = approve(fx.host, first.executionId, "g1", 4n);
    expect(d1).toMatchObject({ ok: true, value: { decision: { seq: 6n } } });
    expect(await fx.host.resume()).toMatchObject({ ok: true });
    // [.., AR g1 4, SUSPEND 5, AD 6, TR 7, TC g2 8, AR g2 9, SUSPEND 10]
    expect(session(fx.host).pendingApproval).toMatchObject({ executionId: first.executionId, toolCallId: "g2", requestSeq: 9n });
    const d2 = approve(fx.host, first.executionId, "g2", 9n, false);
    expect(d2).toMatchObject({ ok: true, value: { decision: { seq: 11n } } });
    expect(await fx.host.resume()).toMatchObject({ ok: true });
    expect(session(fx.host).pendingApproval).toMatchObject({ toolCallId: "g3", requestSeq: 14n });

    const n = journal(fx.host).length;
    const retry1 = approve(fx.host, first.executionId, "g1", 4n);
    expect(retry1.ok && d1.ok && retry1.value.decision).toEqual(d1.ok && d1.value.decision);
    const retry2 = approve(fx.host, first.executionId, "g2", 9n, false);
    expect(retry2.ok && d2.ok && retry2.value.decision).toEqual(d2.ok && d2.value.decision);
    // Changed retries of decided gates, and the latest gate under an older seq, are refused.
    expect(approve(fx.host, first.executionId, "g1", 4n, false)).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(approve(fx.host, first.executionId, "g3", 9n)).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(journal(fx.host)).toHaveLength(n);
    expect(session(fx.host).pendingApproval).toMatchObject({ toolCallId: "g3", requestSeq: 14n });
    expect(approve(fx.host, first.executionId, "g3", 14n)).toMatchObject({ ok: true, value: { decision: { seq: 16n } } });
    expect(await fx.host.resume()).toMatchObject({ ok: true, value: { execState: ExecState.EXEC_COMPLETED } });
    expect(ex.calls.map((c) => c.call.id)).toEqual(["g1", "g3"]);
  });

  it("resume: after a receipt the live tail gates again on a new call, and new input is blocked again (checklist §8.14 #121)", async () => {
    const ex = fakeExecutor();
    const fx = setup({ tools: toolsHarness }, undefined, { tools: ex.executor });
    await createSession(fx.host, "tools");
    await drain(fx.host.exec(execReq({ inputs: [userText("pay")], config: config([gatedCall("c1"), gatedCall("c2")]) })));
    const p = session(fx.host).pendingApproval!;
    expect(approve(fx.host, p.executionId, "c1", p.requestSeq).ok).toBe(true);
    // Decided but without its receipt: still blocked.
    expect(await fx.host.exec(execReq({ inputs: [userText("more")] }))).toMatchObject({ ok: false, reason: "approval_blocked" });
    const resumed = await fx.host.resume();
    expect(resumed).toMatchObject({
      ok: true,
      value: { execState: ExecState.EXEC_AWAITING, pendingApproval: { executionId: p.executionId, toolCallId: "c2", requestSeq: 9n } },
    });
    const kinds = journal(fx.host).map((e) => EventKind[e.event.kind].replace(/^EVENT_/, ""));
    expect(kinds.slice(5)).toEqual(["APPROVAL_RESULT", "TOOL_RESULT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE"]);
    expect(ex.calls.map((c) => c.call.id)).toEqual(["c1"]);
    const blocked = await fx.host.exec(execReq({ inputs: [userText("more")] }));
    expect(blocked).toMatchObject({ ok: false, reason: "approval_blocked" });
    expect(!blocked.ok && blocked.message).toMatch(/c2/);
    expect(journal(fx.host).map((e) => e.seq)).toHaveLength(kinds.length);
  });
});

describe("records past an open gate", () => {
  const exe = "exec-a";
  const continuations: [string, Event[]][] = [
    ["a model call", [ev(exe, EventKind.EVENT_MODEL_CALL, { case: "model", value: { model: "m", inputHash: "x", id: "mc1" } })]],
    ["an output", [ev(exe, EventKind.EVENT_OUTPUT, { case: "message", value: userText("more") })]],
    [
      "another gated call",
      [
        ev(exe, EventKind.EVENT_TOOL_CALL, { case: "tool", value: gated("g2", "k2") }),
        ev(exe, EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: "g2" } }),
      ],
    ],
    ["usage", [ev(exe, EventKind.EVENT_USAGE, { case: "usage", value: { inputTokens: 1n } })]],
    ["an input", [inputEvent(exe, userText("late"))]],
  ];
  for (const [name, records] of continuations) {
    it(`approve: ${name} past an unresolved gate makes the log invalid; nothing is appended and no fence is minted (checklist §8.14 #94)`, async () => {
      const p = await injectedPark(exe);
      inject(p.host, records);
      const n = journal(p.host).length;
      const fence = stateOf(p.host).journal.fence();
      expect(approve(p.host, exe, "g1", 3n)).toMatchObject({ ok: false, reason: "invalid_log" });
      if (records.length === 2) expect(approve(p.host, exe, "g2", 5n)).toMatchObject({ ok: false, reason: "invalid_log" });
      expect(journal(p.host)).toHaveLength(n);
      expect(stateOf(p.host).journal.fence()).toBe(fence);
      expect(await p.host.audit(true)).toMatchObject({
        ok: true,
        value: { replay: { ok: false, divergence: expect.stringMatching(/invalid execution log/) } },
      });
    });
  }

  it("approve: an END past an open gate closes it (this is how Cancel ends a parked turn); Approve refuses it (checklist §8.14 #94)", async () => {
    const p = await injectedPark(exe);
    inject(p.host, [endEvent(exe, "CANCELED")]);
    expect(session(p.host).pendingApproval).toBeUndefined();
    const n = journal(p.host).length;
    expect(approve(p.host, exe, "g1", 3n)).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(journal(p.host)).toHaveLength(n);
  });

  it("approve: ERROR and lifecycle records do not resolve a gate: it stays pending and can be approved (checklist §8.14 #94)", async () => {
    const p = await injectedPark(exe);
    inject(p.host, [errorEvent(exe, Code.Internal, "a failed handoff"), lifecycleEvent(Lifecycle_Kind.LIFECYCLE_SUSPEND)]);
    expect(session(p.host)).toMatchObject({ execState: ExecState.EXEC_AWAITING, pendingApproval: { executionId: exe, toolCallId: "g1", requestSeq: 3n } });
    expect(approve(p.host, exe, "g1", 3n)).toMatchObject({ ok: true, value: { decision: { seq: 6n } } });
  });
});

describe("late records of an old execution", () => {
  const lateRecords = (old: string): [string, Event[]][] => [
    [
      "its receipt",
      [
        ev(old, EventKind.EVENT_TOOL_RESULT, {
          case: "result",
          value: { id: "g1", code: ToolResult_Code.APPROVAL_DENIED, isError: true, approvalRequestSeq: 3n, approvalDecisionSeq: 4n },
        }),
      ],
    ],
    ["its END", [endEvent(old, "COMPLETED")]],
    ["its ERROR", [errorEvent(old, Code.Internal, "late")]],
  ];
  for (const [name, late] of lateRecords("exec-a")) {
    it(`approve: ${name} written after a newer gated execution (same call id and key) does not displace it (checklist §8.14 #98)`, async () => {
      const p = await injectedPark("exec-a");
      expect(approve(p.host, "exec-a", "g1", 3n, false).ok).toBe(true); // decision at 4
      // exec-b reuses g1 and its key: START 5, TC 6, AR 7.
      expect(
        await liveTurn(turnLogOf(p.host), toolHarness([gated()]), scriptedModels(echoScript), [], { executionId: "exec-b", tools: toolDeps(p.ex.executor) }),
      ).toMatchObject({ kind: "parked", gate: { requestSeq: 7n } });
      inject(p.host, late);
      const n = journal(p.host).length;
      // The old decision's exact retry still answers with its record; exec-b's request is the one to decide.
      expect(approve(p.host, "exec-a", "g1", 3n, false)).toMatchObject({ ok: true, value: { decision: { seq: 4n } } });
      expect(approve(p.host, "exec-a", "g1", 7n)).toMatchObject({ ok: false, reason: "invalid_decision" });
      expect(journal(p.host)).toHaveLength(n);
      const d = approve(p.host, "exec-b", "g1", 7n);
      expect(d).toMatchObject({ ok: true, value: { decision: { seq: BigInt(n + 1) } } });
      const rec = d.ok ? fromBinary(EventSchema, d.value.decision.event) : undefined;
      expect(rec).toMatchObject({ executionId: "exec-b", body: { case: "approvalResult", value: { toolCallId: "g1", requestSeq: 7n, approved: true } } });
      // Recovery selects exec-b too: its approved gate runs once, under its own execution.
      expect(await p.host.resume()).toMatchObject({ ok: true, value: { execState: ExecState.EXEC_COMPLETED } });
      expect(p.ex.calls.map((c) => [c.executionId, c.call.id, c.call.idempotencyKey])).toEqual([["exec-b", "g1", "kg"]]);
      expect(
        journal(p.host)
          .filter((e) => e.event.executionId === "exec-b")
          .map((e) => EventKind[e.event.kind].replace(/^EVENT_/, "")),
      ).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT", "OUTPUT", "END"]);
    });
  }
});

describe("late records of an old execution: the projection", () => {
  // pending_approval and exec_state are folded record by record (objects/session/projection.ts):
  // a late END of exec-a clears exec-b's pending gate, and a late receipt moves exec-b out of
  // AWAITING. This host never writes records of an execution other than the latest (one writer;
  // Resume, Cancel and the deadline alarm act on the latest), so only a foreign journal shows it.
  for (const [name, late] of [
    [
      "its receipt",
      [
        ev("exec-a", EventKind.EVENT_TOOL_RESULT, {
          case: "result",
          value: { id: "g1", code: ToolResult_Code.APPROVAL_DENIED, isError: true, approvalRequestSeq: 3n, approvalDecisionSeq: 4n },
        }),
      ],
    ],
    ["its END", [endEvent("exec-a", "COMPLETED")]],
  ] as [string, Event[]][]) {
    it.fails(`pending_approval: ${name} written after a newer gated execution leaves that execution pending and AWAITING (checklist §8.14 #98)`, async () => {
      const p = await injectedPark("exec-a");
      expect(approve(p.host, "exec-a", "g1", 3n, false).ok).toBe(true);
      await liveTurn(turnLogOf(p.host), toolHarness([gated()]), scriptedModels(echoScript), [], { executionId: "exec-b", tools: toolDeps(p.ex.executor) });
      inject(p.host, late);
      expect(session(p.host)).toMatchObject({
        execState: ExecState.EXEC_AWAITING,
        pendingApproval: { executionId: "exec-b", toolCallId: "g1", requestSeq: 7n },
      });
    });
  }
});

describe("input counts on gated executions", () => {
  const exe = "exec-a";
  const start = (inputCount: bigint | undefined) =>
    ev(exe, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { harness: "h", harnessVersion: "1", inputCount } });
  const gate = [ev(exe, EventKind.EVENT_TOOL_CALL, { case: "tool", value: gated() })];
  const cases: [string, Event[]][] = [
    ["a missing input_count", [start(undefined), inputEvent(exe, userText("a"))]],
    ["a negative input_count", [start(-1n), inputEvent(exe, userText("a"))]],
    ["fewer inputs than input_count", [start(2n), inputEvent(exe, userText("a"))]],
    ["more inputs than input_count", [start(1n), inputEvent(exe, userText("a")), inputEvent(exe, userText("b"))]],
  ];
  for (const [name, head] of cases) {
    it(`approve: ${name} on the gated execution fails as an invalid log, appends nothing and mints no fence (checklist §8.14 #99)`, async () => {
      const fx = setup();
      await createSession(fx.host, "echo");
      inject(fx.host, head);
      const requestSeq = inject(fx.host, [...gate, ev(exe, EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: "g1" } })]);
      const n = journal(fx.host).length;
      const fence = stateOf(fx.host).journal.fence();
      expect(approve(fx.host, exe, "g1", requestSeq)).toMatchObject({ ok: false, reason: "invalid_log" });
      expect(journal(fx.host)).toHaveLength(n);
      expect(stateOf(fx.host).journal.fence()).toBe(fence);
    });
  }

  it("approve: an INPUT without its message payload fails as an invalid log and mints no fence (checklist §8.14 #99)", async () => {
    const fx = setup();
    await createSession(fx.host, "echo");
    inject(fx.host, [start(1n), create(EventSchema, { executionId: exe, kind: EventKind.EVENT_INPUT })]);
    const requestSeq = inject(fx.host, [...gate, ev(exe, EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: "g1" } })]);
    const fence = stateOf(fx.host).journal.fence();
    expect(approve(fx.host, exe, "g1", requestSeq)).toMatchObject({ ok: false, reason: "invalid_log" });
    expect(journal(fx.host)).toHaveLength(Number(requestSeq));
    expect(stateOf(fx.host).journal.fence()).toBe(fence);
  });
});

describe("the same tuple in two sessions", () => {
  it("approve: two sessions parked on the same (execution, call, seq) take independent decisions and effects (checklist §8.14 #101)", async () => {
    const ex = fakeExecutor();
    const calls = config([gatedCall("g1")]);
    const hosts = await Promise.all(
      [0, 1].map(async () => {
        const fx = setup({ tools: toolsHarness }, undefined, { tools: ex.executor });
        const uid = await createSession(fx.host, "tools");
        const out = await liveTurn(turnLogOf(fx.host), toolsHarness, scriptedModels(echoScript), ["pay"], {
          name: "tools",
          executionId: "exec-same",
          config: calls,
          tools: toolDeps(ex.executor),
        });
        expect(out).toMatchObject({ kind: "parked", gate: { executionId: "exec-same", toolCallId: "g1", requestSeq: 4n } });
        return { host: fx.host, uid };
      }),
    );
    const [a, b] = hosts as [(typeof hosts)[0], (typeof hosts)[0]];
    const alice = create(IdentityRefSchema, { principal: "alice" });
    const bob = create(IdentityRefSchema, { principal: "bob" });
    const da = approve(a.host, "exec-same", "g1", 4n, true, { identity: alice });
    expect(da).toMatchObject({ ok: true, value: { decision: { seq: 5n } } });
    // Session A's decision leaves B undecided; B's own (different) decision is accepted.
    expect(session(b.host).pendingApproval).toMatchObject({ executionId: "exec-same", toolCallId: "g1", requestSeq: 4n });
    const db = approve(b.host, "exec-same", "g1", 4n, false, { identity: bob });
    expect(db).toMatchObject({ ok: true, value: { decision: { seq: 5n } } });
    expect(da.ok && db.ok && da.value.decision.hash).not.toBe(db.ok && db.value.decision.hash);
    // Each retry answers with its own session's record; A's decision replayed on B is a change there.
    const again = approve(a.host, "exec-same", "g1", 4n, true, { identity: alice });
    expect(again.ok && da.ok && again.value.decision).toEqual(da.ok && da.value.decision);
    expect(approve(b.host, "exec-same", "g1", 4n, true, { identity: alice })).toMatchObject({ ok: false, reason: "invalid_decision" });

    expect(await a.host.resume()).toMatchObject({ ok: true, value: { execState: ExecState.EXEC_COMPLETED } });
    expect(await b.host.resume()).toMatchObject({ ok: true, value: { execState: ExecState.EXEC_COMPLETED } });
    const receipt = (host: SessionHost) => journal(host).find((e) => e.event.kind === EventKind.EVENT_TOOL_RESULT)!.event.body;
    expect(receipt(a.host)).toMatchObject({ case: "result", value: { code: ToolResult_Code.CODE_UNSPECIFIED, isError: false } });
    expect(receipt(b.host)).toMatchObject({ case: "result", value: { code: ToolResult_Code.APPROVAL_DENIED, isError: true } });
    expect(ex.calls.map((c) => c.sessionUid)).toEqual([a.uid]);
  });
});
