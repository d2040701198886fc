/**
 * Approval gates at the session level (issue 5; docs/behaviour.md §4.5 item 11, §4.10, §4.11, checklist
 * checklist §8.17 #186-191): park, blocked input, Approve semantics, recovery, and deadline alarms.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, IdentityRefSchema, ToolResult_Code } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import { fakeExecutor } from "../support/controller-fixture.js";
import { createSession, drain, execReq, kinds, setup, sessionOf as session } from "../support/session-fixture.js";

const config = (calls: unknown[]) => new TextEncoder().encode(JSON.stringify({ calls }));
const gatedCall = (extra: Record<string, unknown> = {}) => ({ id: "g1", tool: "pay", args: { amount: 10 }, mediation: "REQUIRES_APPROVAL", ...extra });

function journalKinds(host: SessionHost): string[] {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => EventKind[fromBinary(EventSchema, x.event).kind].replace(/^EVENT_/, ""));
}

async function parked(o: { approvalTimeoutSeconds?: number; timeout?: number } = {}) {
  const ex = fakeExecutor();
  const fx = setup({ tools: toolsHarness }, undefined, { tools: ex.executor, approvalTimeoutSeconds: o.approvalTimeoutSeconds });
  const uid = await createSession(fx.host, "tools");
  const turn = await drain(
    fx.host.exec(execReq({ inputs: [userText("pay it")], config: config([gatedCall(o.timeout ? { approval_timeout_seconds: o.timeout } : {})]) })),
  );
  return { ...fx, ex, uid, turn };
}

const decision = (host: SessionHost, approved: boolean, extra: Record<string, unknown> = {}) => {
  const p = session(host).pendingApproval!;
  return host.approve({
    executionId: p.executionId,
    toolCallId: p.toolCallId,
    requestSeq: p.requestSeq,
    approved,
    reason: approved ? "ok" : "no",
    ...extra,
  } as Parameters<SessionHost["approve"]>[0]);
};

describe("park", () => {
  it("park: the Exec stream ends OK with a final session frame: AWAITING, COLD, pending approval, last_seq = head", async () => {
    const { host, turn, ex } = await parked();
    expect(turn.failure).toBeUndefined();
    expect(kinds(turn.updates)).toEqual(["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_TOOL_CALL", "EVENT_APPROVAL_REQUEST", "EVENT_LIFECYCLE"]);
    const last = turn.updates[turn.updates.length - 1]!;
    expect(last.update.case).toBe("session");
    const final = last.update.case === "session" ? last.update.value : undefined;
    expect(final).toMatchObject({ execState: ExecState.EXEC_AWAITING, computeState: ComputeState.COMPUTE_COLD, lastSeq: 5n });
    expect(final?.pendingApproval).toMatchObject({ toolCallId: "g1", requestSeq: 4n });
    expect(session(host).pendingApproval?.requestSeq).toBe(4n);
    expect(ex.calls).toHaveLength(0);
  });

  it("park: new input is refused before any frame, both before and after the decision", async () => {
    const { host } = await parked();
    expect(await host.exec(execReq({ inputs: [userText("more")] }))).toMatchObject({ ok: false, reason: "approval_blocked" });
    expect(decision(host, true).ok).toBe(true);
    expect(await host.exec(execReq({ inputs: [userText("more")] }))).toMatchObject({ ok: false, reason: "approval_blocked" });
  });

  it("park: Resume and an inputless Exec of an undecided gate return the paused session and write nothing", async () => {
    const { host } = await parked();
    const before = journalKinds(host);
    expect(await host.resume()).toMatchObject({ ok: true, value: { execState: ExecState.EXEC_AWAITING } });
    const frames = await drain(host.exec(execReq({ harness: "echo", config: new Uint8Array([1]) })));
    expect(frames.failure).toBeUndefined();
    expect(frames.updates.map((u) => u.update.case)).toEqual(["session", "session"]);
    expect(journalKinds(host)).toEqual(before);
  });
});

describe("Approve", () => {
  it("approve: commits only the decision, with the identity as actor; an exact retry returns the same record", async () => {
    const { host, ex } = await parked();
    const identity = create(IdentityRefSchema, { principal: "alice", issuer: "idp", subject: "s1" });
    const r = decision(host, true, { identity });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.decision.seq).toBe(6n);
    const ev = fromBinary(EventSchema, r.value.decision.event);
    expect(ev).toMatchObject({ kind: EventKind.EVENT_APPROVAL_RESULT, actor: { principal: "alice" } });
    expect(ev.body.case === "approvalResult" && ev.body.value).toMatchObject({ toolCallId: "g1", approved: true, reason: "ok", requestSeq: 4n });
    expect(r.value.session.pendingApproval).toBeUndefined();
    expect(r.value.session.computeState).toBe(ComputeState.COMPUTE_COLD);
    expect(ex.calls).toHaveLength(0);
    const again = host.approve({ executionId: ev.executionId, toolCallId: "g1", requestSeq: 4n, approved: true, reason: "ok", identity });
    expect(again.ok && again.value.decision).toEqual(r.value.decision);
    expect(journalKinds(host)).toHaveLength(6);
  });

  it("approve: a changed retry, a wrong tuple, or a resolved gate is refused and writes nothing", async () => {
    const { host } = await parked();
    const p = session(host).pendingApproval!;
    expect(host.approve({ executionId: p.executionId, toolCallId: "nope", requestSeq: p.requestSeq, approved: true, reason: "" })).toMatchObject({
      ok: false,
      reason: "invalid_decision",
    });
    expect(host.approve({ executionId: "0000000000000000", toolCallId: "g1", requestSeq: p.requestSeq, approved: true, reason: "" })).toMatchObject({
      ok: false,
      reason: "invalid_decision",
    });
    expect(host.approve({ executionId: p.executionId, toolCallId: "g1", requestSeq: 3n, approved: true, reason: "" })).toMatchObject({
      ok: false,
      reason: "invalid_decision",
    });
    expect(decision(host, false).ok).toBe(true);
    for (const changed of [
      { approved: true, reason: "no" },
      { approved: false, reason: "changed" },
      { approved: false, reason: "no", identity: create(IdentityRefSchema, { principal: "mallory" }) },
    ]) {
      expect(host.approve({ executionId: p.executionId, toolCallId: "g1", requestSeq: p.requestSeq, ...changed })).toMatchObject({
        ok: false,
        reason: "invalid_decision",
      });
    }
    expect(journalKinds(host)).toHaveLength(6);
  });

  it("approve: then Resume runs the executor once; the turn ends and new input is admitted", async () => {
    const { host, ex } = await parked();
    expect(decision(host, true).ok).toBe(true);
    const resumed = await host.resume();
    expect(resumed).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_LIVE, execState: ExecState.EXEC_COMPLETED } });
    expect(ex.effects.size).toBe(1);
    expect(journalKinds(host)).toEqual([
      "EXECUTION_START",
      "INPUT",
      "TOOL_CALL",
      "APPROVAL_REQUEST",
      "LIFECYCLE",
      "APPROVAL_RESULT",
      "TOOL_RESULT",
      "OUTPUT",
      "END",
      "LIFECYCLE",
    ]);
    expect((await drain(host.exec(execReq({ inputs: [userText("next")], harness: "echo" })))).failure).toBeUndefined();
    expect((await host.audit(true)).ok).toBe(true);
  });

  it("deny: an inputless Exec recovers with an APPROVAL_DENIED receipt and no executor call", async () => {
    const { host, ex } = await parked();
    expect(decision(host, false).ok).toBe(true);
    const frames = await drain(host.exec(execReq({})));
    expect(frames.failure).toBeUndefined();
    expect(kinds(frames.updates)).toEqual(["EVENT_TOOL_RESULT", "EVENT_OUTPUT", "EVENT_END"]);
    const receipt = frames.updates.find((u) => u.update.case === "record" && u.update.value.event!.kind === EventKind.EVENT_TOOL_RESULT)!;
    const body = receipt.update.case === "record" ? receipt.update.value.event!.body : undefined;
    expect(body?.case === "result" && body.value).toMatchObject({
      code: ToolResult_Code.APPROVAL_DENIED,
      isError: true,
      approvalRequestSeq: 4n,
      approvalDecisionSeq: 6n,
    });
    expect(ex.calls).toHaveLength(0);
    const final = frames.updates[frames.updates.length - 1]!;
    expect(final.update.case === "session" && final.update.value.pendingApproval).toBeUndefined();
  });
});

describe("approval without an executor", () => {
  it("approve: recovery of an approved gate without an executor is refused, writes nothing and keeps the decision", async () => {
    const fx = setup({ tools: toolsHarness });
    await createSession(fx.host, "tools");
    await drain(fx.host.exec(execReq({ inputs: [], config: config([gatedCall()]) })));
    expect(decision(fx.host, true).ok).toBe(true);
    const before = journalKinds(fx.host);
    for (let i = 0; i < 2; i++) expect(await fx.host.resume()).toMatchObject({ ok: false, reason: "missing_executor" });
    const frames = await drain(fx.host.exec(execReq({})));
    expect(frames.failure).toMatchObject({ reason: "missing_executor" });
    expect(journalKinds(fx.host)).toEqual(before);
    expect(session(fx.host)).toMatchObject({ execState: ExecState.EXEC_AWAITING, computeState: ComputeState.COMPUTE_COLD });
  });
});

describe("approval deadlines", () => {
  it("deadline: the alarm denies as the system, completes the turn once, and a second firing changes nothing", async () => {
    const { host, alarm, tick, ex } = await parked({ timeout: 60 });
    expect(alarm.at).toBe(1_700_000_000_000 + 60_000);
    await host.alarm(); // early wake-up: not yet due, re-armed
    expect(journalKinds(host)).toHaveLength(5);
    tick(61_000);
    await host.alarm();
    const after = journalKinds(host);
    expect(after).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE", "APPROVAL_RESULT", "TOOL_RESULT", "OUTPUT", "END"]);
    const r = host.read(6n, 6n, 1);
    const ev = r.ok ? fromBinary(EventSchema, r.value[0]!.event) : undefined;
    expect(ev?.actor?.principal).toBe("system:approval-deadline");
    expect(ev?.body.case === "approvalResult" && ev.body.value.reason).toMatch(/deadline/);
    await host.alarm();
    expect(journalKinds(host)).toEqual(after);
    expect(ex.calls).toHaveLength(0);
    expect(alarm.at).toBeNull();
    expect(session(host).execState).toBe(ExecState.EXEC_COMPLETED);
  });

  it("deadline: the deployment default applies to gates that declare none; a human decision first wins", async () => {
    const { host, alarm, tick } = await parked({ approvalTimeoutSeconds: 30 });
    expect(alarm.at).toBe(1_700_000_000_000 + 30_000);
    expect(decision(host, true).ok).toBe(true);
    expect(alarm.at).toBeNull();
    tick(31_000);
    await host.alarm();
    expect(journalKinds(host)).toHaveLength(6);
  });
});
