/**
 * Resume of forked children, in process on sql.js (docs/behaviour.md §2.9, §4.9; checklist §8.14 #114,
 * checklist §8.16 #146, checklist §8.17 #178, #179): a child restores only its own SUSPEND ref, and refuses to re-drive
 * what it inherited half-done (a partly committed invocation, a tool intent or an open gate) while
 * a new turn of its own runs normally.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, Lifecycle_Kind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState, SessionSchema, type SnapshotRef } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../../../proto/ids.js";
import { userText } from "../../../proto/messages.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import { createBuiltinRuntime } from "../../../runtimes/builtin/runtime.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import type { Runtime } from "../../../runtimes/runtime-spi.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import { fakeExecutor } from "../support/controller-fixture.js";
import { createSession, drain, execReq, setup, type SetupOptions, sessionOf as session } from "../support/session-fixture.js";

function journal(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => ({ ...x, decoded: fromBinary(EventSchema, x.event) }));
}

const kindsOf = (host: SessionHost) => journal(host).map((r) => EventKind[r.decoded.kind].replace(/^EVENT_/, ""));
const seqOf = (host: SessionHost, kind: EventKind) => journal(host).find((r) => r.decoded.kind === kind)!.seq;

/** The built-in runtime, recording every create, restore and snapshot it is asked for. */
function spyRuntime() {
  const inner = createBuiltinRuntime();
  const calls: { op: "create" | "restore" | "snapshot"; uid: string; ref?: string }[] = [];
  const runtime: Runtime = {
    ...inner,
    create: (spec) => (calls.push({ op: "create", uid: spec.sessionUid }), inner.create(spec)),
    restore: (ref: SnapshotRef, spec) => (calls.push({ op: "restore", uid: spec.sessionUid, ref: ref.local }), inner.restore(ref, spec)),
    snapshot: (inc, kind) => (calls.push({ op: "snapshot", uid: inc.id }), inner.snapshot(inc, kind)),
  };
  return { runtime, calls };
}

/** Forks `parent` at `atSeq` into a fresh child the way worker/fork.ts does (begin, seed, finish). */
async function forkChild(parent: SessionHost, atSeq: bigint, extra: Record<string, Harness> = {}, o: SetupOptions = {}) {
  const src = await parent.forkSource(atSeq);
  if (!src.ok) throw new Error(src.message);
  const statics = fromBinary(SessionSchema, src.value.statics);
  const child = setup(extra, undefined, o);
  const uid = mintSessionUid();
  const parentUid = session(parent).metadata!.uid;
  const childStatics = create(SessionSchema, { harness: statics.harness, metadata: { project: "default", name: "c" }, parentUid, forkSeq: src.value.atSeq });
  expect(child.host.forkBegin("default", uid, childStatics).ok).toBe(true);
  const page = parent.read(1n, src.value.atSeq, 10_000);
  if (!page.ok) throw new Error(page.message);
  expect(child.host.forkSeed(page.value).ok).toBe(true);
  const sealed = child.host.forkFinish(src.value.atSeq, src.value.states);
  if (!sealed.ok) throw new Error(sealed.message);
  return { ...child, uid };
}

/** An echo harness that counts its runs (a refused recovery must never reach it). */
function countingEcho() {
  const runs = { n: 0 };
  const harness: Harness = { describe: echoHarness.describe, run: (start, sink) => (runs.n++, echoHarness.run(start, sink)) };
  return { harness, runs };
}

const toolConfig = (calls: unknown[]) => new TextEncoder().encode(JSON.stringify({ calls }));

describe("a forked child's SUSPEND refs (checklist §8.16 #146)", () => {
  it("resume (checklist §8.16 #146): a child ignores the parent's inherited SUSPEND ref, and later restores its own", async () => {
    const p = setup();
    const parentUid = await createSession(p.host);
    await drain(p.host.exec(execReq({ inputs: [userText("a")] })));
    expect((await p.host.suspend()).ok).toBe(true);
    const inherited = journal(p.host).at(-1)!.decoded.body;
    expect(inherited.case === "lifecycle" && inherited.value).toMatchObject({ kind: Lifecycle_Kind.LIFECYCLE_SUSPEND, snapshotLocal: parentUid });

    const spy = spyRuntime();
    const c = await forkChild(p.host, 0n, {}, { runtime: spy.runtime });
    expect(await c.host.resume()).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_LIVE } });
    // No SUSPEND of its own: a fresh placement of the child, never a restore of the parent's compute.
    expect(spy.calls).toEqual([{ op: "create", uid: c.uid }]);

    expect((await c.host.suspend()).ok).toBe(true);
    const own = journal(c.host).at(-1)!.decoded.body;
    expect(own.case === "lifecycle" && own.value).toMatchObject({ kind: Lifecycle_Kind.LIFECYCLE_SUSPEND, snapshotLocal: c.uid });
    spy.calls.length = 0;
    expect((await c.host.resume()).ok).toBe(true);
    expect(spy.calls).toEqual([{ op: "restore", uid: c.uid, ref: c.uid }]);
    expect(kindsOf(c.host).slice(-4)).toEqual(["LIFECYCLE", "LIFECYCLE", "LIFECYCLE", "LIFECYCLE"]); // FORK, RESUME, SUSPEND, RESUME
  });
});

describe("a child forked between a turn's inputs (checklist §8.17 #178)", () => {
  it("resume (checklist §8.17 #178): a partly committed invocation is FAILED_PRECONDITION with guidance and writes nothing; a new Exec then works", async () => {
    const p = setup();
    await createSession(p.host);
    await drain(p.host.exec(execReq({ inputs: [userText("first"), userText("second")] })));
    expect(kindsOf(p.host)).toEqual(["EXECUTION_START", "INPUT", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);

    const echo = countingEcho();
    const c = await forkChild(p.host, 2n, { echo: echo.harness });
    const before = journal(c.host);
    expect(before.map((r) => r.decoded.kind)).toEqual([EventKind.EVENT_EXECUTION_START, EventKind.EVENT_INPUT, EventKind.EVENT_LIFECYCLE]);

    const refused = await c.host.resume();
    expect(refused).toMatchObject({ ok: false, reason: "incomplete_invocation" });
    const message = refused.ok ? "" : refused.message;
    expect(message).toContain("committed 1 of its 2 inputs");
    expect(message).toContain("never reached the harness");
    expect(message).toContain("Exec again with all of the turn's inputs");
    expect(journal(c.host)).toEqual(before);
    expect(session(c.host)).toMatchObject({ lastSeq: 3n, computeState: ComputeState.COMPUTE_COLD });
    expect(echo.runs.n).toBe(0);

    const turn = await drain(c.host.exec(execReq({ inputs: [userText("again")] })));
    expect(turn.failure).toBeUndefined();
    expect(echo.runs.n).toBe(1);
    // Replay serves exactly the committed records: the rejected prefix, the marker, the new turn.
    expect(kindsOf(c.host)).toEqual(["EXECUTION_START", "INPUT", "LIFECYCLE", "EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    expect(journal(c.host).slice(0, 3)).toEqual(before);
    // Controller replay skips the execution that never reached the harness.
    expect(await c.host.audit(true)).toMatchObject({ ok: true, value: { chain: { ok: true }, replay: { ok: true, outputs: ["echo:again"] } } });

    const runs = echo.runs.n;
    expect(await c.host.resume()).toMatchObject({ ok: true, value: { lastSeq: 9n, computeState: ComputeState.COMPUTE_LIVE } });
    expect(kindsOf(c.host).slice(8)).toEqual(["LIFECYCLE"]);
    // Nothing to re-drive: the harness does not run again.
    expect(echo.runs.n).toBe(runs);
  });
});

describe("a child forked at a tool intent (checklist §8.17 #179)", () => {
  async function parentWithToolTurn() {
    const ex = fakeExecutor();
    const p = setup({ tools: toolsHarness }, undefined, { tools: ex.executor });
    await createSession(p.host, "tools");
    const turn = await drain(p.host.exec(execReq({ inputs: [userText("look")], config: toolConfig([{ id: "c1", tool: "lookup", args: { q: 1 } }]) })));
    expect(turn.failure).toBeUndefined();
    expect(kindsOf(p.host)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
    expect(ex.calls).toHaveLength(1);
    return { p, ex };
  }

  it("resume (checklist §8.17 #179): a child forked at TOOL_CALL is FAILED_PRECONDITION with guidance, repeats no effect, writes nothing; a new turn performs its own", async () => {
    const { p, ex } = await parentWithToolTurn();
    // One executor for the deployment: the parent's effect is already in it.
    const c = await forkChild(p.host, seqOf(p.host, EventKind.EVENT_TOOL_CALL), { tools: toolsHarness }, { tools: ex.executor });
    const before = journal(c.host);
    expect(before.map((r) => EventKind[r.decoded.kind])).toEqual(["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_TOOL_CALL", "EVENT_LIFECYCLE"]);

    const refused = await c.host.resume();
    expect(refused).toMatchObject({ ok: false, reason: "inherited_intent" });
    expect(refused.ok ? "" : refused.message).toContain("fork at or after the TOOL_RESULT, or Exec a new turn");
    // An inputless Exec is a recovery too, and is refused the same way.
    const redrive = await drain(c.host.exec(execReq({})));
    expect(redrive.failure).toMatchObject({ reason: "inherited_intent" });
    expect(journal(c.host)).toEqual(before);
    expect(ex.calls).toHaveLength(1);

    const turn = await drain(c.host.exec(execReq({ inputs: [userText("mine")], config: toolConfig([{ id: "c1", tool: "lookup", args: { q: 2 } }]) })));
    expect(turn.failure).toBeUndefined();
    expect(ex.calls).toHaveLength(2);
    expect(ex.calls[1]).toMatchObject({ sessionUid: c.uid, call: { tool: "lookup" } });
    expect(ex.calls[1]!.call.idempotencyKey).not.toBe(ex.calls[0]!.call.idempotencyKey);
    expect(kindsOf(c.host).slice(4)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END"]);
  });

  it("resume (checklist §8.17 #179): a child forked at the TOOL_RESULT resumes from the inherited receipt without calling the executor", async () => {
    const { p, ex } = await parentWithToolTurn();
    const c = await forkChild(p.host, seqOf(p.host, EventKind.EVENT_TOOL_RESULT), { tools: toolsHarness }, { tools: ex.executor });
    expect(await c.host.resume()).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_LIVE } });
    expect(kindsOf(c.host)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "TOOL_RESULT", "LIFECYCLE", "OUTPUT", "END", "LIFECYCLE"]);
    expect(ex.calls).toHaveLength(1);
    expect(await c.host.audit(true)).toMatchObject({ ok: true, value: { replay: { ok: true } } });
  });
});

describe("a child forked inside an approval gate (checklist §8.14 #114)", () => {
  const gated = { id: "g1", tool: "pay", args: { amount: 10 }, mediation: "REQUIRES_APPROVAL" };

  async function parkedParent() {
    const ex = fakeExecutor();
    const p = setup({ tools: toolsHarness }, undefined, { tools: ex.executor });
    await createSession(p.host, "tools");
    const turn = await drain(p.host.exec(execReq({ inputs: [userText("pay it")], config: toolConfig([gated]) })));
    expect(turn.failure).toBeUndefined();
    expect(kindsOf(p.host)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE"]);
    return { p, ex };
  }

  const approve = (host: SessionHost) => {
    const pending = session(host).pendingApproval!;
    return host.approve({
      executionId: pending.executionId,
      toolCallId: pending.toolCallId,
      requestSeq: pending.requestSeq,
      approved: true,
      reason: "ok",
    } as Parameters<SessionHost["approve"]>[0]);
  };

  for (const at of ["TOOL_CALL", "APPROVAL_REQUEST", "head (after the park's SUSPEND)"] as const) {
    it(`resume (checklist §8.14 #114): a child forked at ${at} refuses the inherited open intent and writes nothing; an explicit child Exec runs`, async () => {
      const { p, ex } = await parkedParent();
      const seq =
        at === "TOOL_CALL" ? seqOf(p.host, EventKind.EVENT_TOOL_CALL) : at === "APPROVAL_REQUEST" ? seqOf(p.host, EventKind.EVENT_APPROVAL_REQUEST) : 0n;
      const c = await forkChild(p.host, seq, { tools: toolsHarness }, { tools: ex.executor });
      // The inherited request cannot be approved here: the child has no pending approval, and the
      // parent's tuple is refused.
      expect(session(c.host).pendingApproval).toBeUndefined();
      const before = journal(c.host);

      const owed = session(p.host).pendingApproval!;
      const decided = c.host.approve({
        executionId: owed.executionId,
        toolCallId: owed.toolCallId,
        requestSeq: owed.requestSeq,
        approved: true,
        reason: "ok",
      } as Parameters<SessionHost["approve"]>[0]);
      expect(decided).toMatchObject({ ok: false, reason: "invalid_decision" });
      const refused = await c.host.resume();
      expect(refused).toMatchObject({ ok: false, reason: "inherited_intent" });
      expect(refused.ok ? "" : refused.message).toContain("inherited from the fork parent");
      expect((await drain(c.host.exec(execReq({})))).failure).toMatchObject({ reason: "inherited_intent" });
      expect(journal(c.host)).toEqual(before);
      expect(ex.calls).toHaveLength(0);

      const turn = await drain(c.host.exec(execReq({ inputs: [userText("plain")], config: toolConfig([]) })));
      expect(turn.failure).toBeUndefined();
      expect(kindsOf(c.host).slice(before.length)).toEqual(["EXECUTION_START", "INPUT", "OUTPUT", "END"]);
      expect(session(c.host)).toMatchObject({ execState: ExecState.EXEC_COMPLETED });
      // The parent is untouched and still waits for its own decision.
      expect(session(p.host).pendingApproval?.toolCallId).toBe("g1");
    });
  }

  it("resume (checklist §8.14 #114): a child forked after the decision but before the receipt is refused too; the executor is never called", async () => {
    const { p, ex } = await parkedParent();
    expect(approve(p.host).ok).toBe(true);
    const c = await forkChild(p.host, seqOf(p.host, EventKind.EVENT_APPROVAL_RESULT), { tools: toolsHarness }, { tools: ex.executor });
    const before = journal(c.host);
    expect(await c.host.resume()).toMatchObject({ ok: false, reason: "inherited_intent" });
    expect(journal(c.host)).toEqual(before);
    expect(ex.calls).toHaveLength(0);
    // The inherited decision blocks no new turn of the child's own, which starts its own gate.
    const turn = await drain(c.host.exec(execReq({ inputs: [userText("again")], config: toolConfig([gated]) })));
    expect(turn.failure).toBeUndefined();
    expect(kindsOf(c.host).slice(before.length)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE"]);
    expect(session(c.host).pendingApproval).toMatchObject({ toolCallId: "g1", requestSeq: BigInt(before.length + 4) });
    expect(ex.calls).toHaveLength(0);
  });

  it("resume (checklist §8.14 #114): an inherited completed receipt is served by the child's Resume and replay, without the executor", async () => {
    const { p, ex } = await parkedParent();
    expect(approve(p.host).ok).toBe(true);
    expect((await p.host.resume()).ok).toBe(true);
    expect(ex.calls).toHaveLength(1);
    const c = await forkChild(p.host, seqOf(p.host, EventKind.EVENT_TOOL_RESULT), { tools: toolsHarness }, { tools: ex.executor });
    const inherited = journal(c.host).length;
    expect(await c.host.resume()).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_LIVE } });
    expect(kindsOf(c.host).slice(inherited)).toEqual(["OUTPUT", "END", "LIFECYCLE"]);
    expect(ex.calls).toHaveLength(1);
    expect(await c.host.audit(true)).toMatchObject({ ok: true, value: { chain: { ok: true }, replay: { ok: true, outputs: ["pay: ok CODE_UNSPECIFIED"] } } });
  });
});
