/**
 * Recovering a decided gate, and gates a fork child inherits, in process on sql.js (docs/behaviour.md
 * §4.10, §4.11 "Forked children"; checklist §8.17 #189, checklist §8.14 #97).
 *
 * #189's repair half (an inputless Exec appending the missing APPROVAL_REQUEST of a TOOL_CALL-only
 * cut) cannot arise here: the host writes the gated TOOL_CALL and its request in one transaction
 * (objects/controller/tool-steps.ts `park`), and a fork cut between them is an inherited intent,
 * refused (#114). Its preconditions apply to the recovery an inputless Exec does run: a decided
 * gate waiting for its receipt.
 */
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../../../proto/ids.js";
import { userText } from "../../../proto/messages.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import { fakeExecutor } from "../support/controller-fixture.js";
import { createSession, drain, execReq, kinds, setup, sessionOf as session, inject } from "../support/session-fixture.js";

type Body = MessageInitShape<typeof EventSchema>["body"];

const config = (calls: unknown[]) => new TextEncoder().encode(JSON.stringify({ calls }));
const gatedCall = { id: "g1", tool: "pay", args: { amount: 10 }, mediation: "REQUIRES_APPROVAL" };

function journal(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => ({ seq: x.seq, hash: x.hash, event: fromBinary(EventSchema, x.event) }));
}

const kindsOf = (host: SessionHost) => journal(host).map((r) => EventKind[r.event.kind].replace(/^EVENT_/, ""));

/** A session of the test-only `tools` harness parked on gate g1: [START, INPUT, TC, AR 4, SUSPEND]. */
async function parked() {
  const ex = fakeExecutor();
  const fx = setup({ tools: toolsHarness }, undefined, { tools: ex.executor });
  await createSession(fx.host, "tools");
  const turn = await drain(fx.host.exec(execReq({ inputs: [userText("pay it")], config: config([gatedCall]) })));
  expect(turn.failure).toBeUndefined();
  expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE"]);
  return { ...fx, ex };
}

function approveFirst(host: SessionHost, approved = true) {
  const p = session(host).pendingApproval!;
  return host.approve({ executionId: p.executionId, toolCallId: p.toolCallId, requestSeq: p.requestSeq, approved, reason: approved ? "ok" : "no" });
}

describe("recovery preconditions (checklist §8.17 #189)", () => {
  it("exec: an inputless Exec recovering a decided gate checks a stale CAS (ABORTED) and a past deadline (DEADLINE_EXCEEDED) before anything; the correct CAS recovers (checklist §8.17 #189)", async () => {
    const fx = await parked();
    expect(approveFirst(fx.host)).toMatchObject({ ok: true, value: { decision: { seq: 6n } } });
    const before = journal(fx.host);
    const head = before.at(-1)!.seq;

    const stale = await drain(fx.host.exec(execReq({ expectedLastSeq: 0n })));
    expect(stale.failure).toMatchObject({ reason: "cas_conflict" });
    expect(kinds(stale.updates)).toEqual([]);
    // Past deadline: any instant before the host's clock (1.7e12 ms).
    const late = await drain(fx.host.exec(execReq({ expectedLastSeq: head, deadlineUnix: 1_000_000n })));
    expect(late.failure).toMatchObject({ reason: "deadline_exceeded" });
    expect(kinds(late.updates)).toEqual([]);
    expect(journal(fx.host)).toEqual(before);
    expect(fx.ex.calls).toHaveLength(0);
    expect(session(fx.host)).toMatchObject({ execState: ExecState.EXEC_AWAITING, lastSeq: head });

    const ok = await drain(fx.host.exec(execReq({ expectedLastSeq: head })));
    expect(ok.failure).toBeUndefined();
    expect(kinds(ok.updates)).toEqual(["EVENT_TOOL_RESULT", "EVENT_OUTPUT", "EVENT_END"]);
    const final = ok.updates.at(-1)!.update;
    expect(final.case === "session" && final.value).toMatchObject({ execState: ExecState.EXEC_COMPLETED, computeState: ComputeState.COMPUTE_LIVE });
    expect(final.case === "session" && final.value.pendingApproval).toBeUndefined();
    expect(fx.ex.calls).toHaveLength(1);
    expect(journal(fx.host).slice(0, before.length)).toEqual(before);
  });

  it("exec: an inputless Exec on an undecided gate writes nothing however often it is repeated (checklist §8.17 #189)", async () => {
    const fx = await parked();
    const before = journal(fx.host);
    for (let i = 0; i < 2; i++) {
      const r = await drain(fx.host.exec(execReq({})));
      expect(r.failure).toBeUndefined();
      expect(kinds(r.updates)).toEqual([]);
      const last = r.updates.at(-1)!.update;
      expect(last.case === "session" && last.value).toMatchObject({
        execState: ExecState.EXEC_AWAITING,
        pendingApproval: { toolCallId: "g1", requestSeq: 4n },
      });
    }
    expect(journal(fx.host)).toEqual(before);
    expect(fx.ex.calls).toHaveLength(0);
  });
});

/** Forks `parent` at `atSeq` into a fresh child the way worker/fork.ts does (begin, seed, finish). */
async function forkChild(parent: SessionHost, atSeq: bigint, ex: ReturnType<typeof fakeExecutor>) {
  const src = await parent.forkSource(atSeq);
  if (!src.ok) throw new Error(src.message);
  const statics = fromBinary(SessionSchema, src.value.statics);
  const child = setup({ tools: toolsHarness }, undefined, { tools: ex.executor });
  const childStatics = create(SessionSchema, {
    harness: statics.harness,
    metadata: { project: "default", name: "c" },
    parentUid: session(parent).metadata!.uid,
    forkSeq: src.value.atSeq,
  });
  expect(child.host.forkBegin("default", mintSessionUid(), childStatics).ok).toBe(true);
  const page = parent.read(1n, src.value.atSeq, 10_000);
  if (!page.ok) throw new Error(page.message);
  expect(child.host.forkSeed(page.value).ok).toBe(true);
  const sealed = child.host.forkFinish(src.value.atSeq, src.value.states);
  if (!sealed.ok) throw new Error(sealed.message);
  return child;
}

describe("inherited requests (checklist §8.14 #97)", () => {
  it("approve: a forked child reports no pending approval of its own and refuses the inherited request, even after a receipt lands; a new child turn gates on its own (checklist §8.14 #97)", async () => {
    const p = await parked();
    const owed = session(p.host).pendingApproval!;
    const c = await forkChild(p.host, 0n, p.ex);
    const child = session(c.host);
    expect(child.pendingApproval).toBeUndefined();
    const tuple = { executionId: owed.executionId, toolCallId: "g1", requestSeq: owed.requestSeq, approved: true, reason: "ok" };
    const refusedOnce = c.host.approve(tuple);
    expect(refusedOnce).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(refusedOnce.ok ? "" : refusedOnce.message).toContain("inherited from the fork parent");
    const forkHead = journal(c.host).at(-1)!.seq;

    // A decision and receipt for the inherited request written after the FORK marker (no API
    // writes them in a child; a foreign writer could): the request stays inherited.
    const ev = (kind: EventKind, body: Body) => create(EventSchema, { executionId: owed.executionId, kind, body });
    inject(c.host, [
      ev(EventKind.EVENT_APPROVAL_RESULT, {
        case: "approvalResult",
        value: { toolCallId: "g1", approved: true, reason: "elsewhere", requestSeq: owed.requestSeq },
      }),
      ev(EventKind.EVENT_TOOL_RESULT, { case: "result", value: { id: "g1", approvalRequestSeq: owed.requestSeq, approvalDecisionSeq: forkHead + 1n } }),
    ]);
    expect(session(c.host).pendingApproval).toBeUndefined();
    const n = journal(c.host).length;
    const refusedAgain = c.host.approve(tuple);
    expect(refusedAgain).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(journal(c.host)).toHaveLength(n);

    // The child's own turn gates on its own request, which is pending and can be decided here.
    const turn = await drain(c.host.exec(execReq({ inputs: [userText("again")], config: config([gatedCall]) })));
    expect(turn.failure).toBeUndefined();
    const own = session(c.host).pendingApproval!;
    expect(own).toMatchObject({ toolCallId: "g1", requestSeq: BigInt(n + 4) });
    expect(own.executionId).not.toBe(owed.executionId);
    expect(approveFirst(c.host)).toMatchObject({ ok: true });
    expect((await c.host.resume()).ok).toBe(true);
    expect(session(c.host).execState).toBe(ExecState.EXEC_COMPLETED);
    expect(session(c.host).pendingApproval).toBeUndefined();
    expect(p.ex.calls).toHaveLength(1);
    // The parent still waits on its own request.
    expect(session(p.host).pendingApproval).toMatchObject({ executionId: owed.executionId, requestSeq: owed.requestSeq });
  });
});
