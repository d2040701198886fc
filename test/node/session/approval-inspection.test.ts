/**
 * Approval gates and harness identity at the session level, continued from approvals.test.ts and
 * approval-selection.test.ts (docs/behaviour.md §4.11, §2.7; checklist §8.13 #84, #88, checklist §8.14 #89, #95,
 * #96, #100). This host has no InspectApproval: a gate is inspected through the session's
 * pending_approval and exec_state, through Approve's validation (an exact retry returns the
 * recorded decision) and through Resume. Journals the API cannot produce are written through the
 * session's own append path (as in approval-selection.test.ts).
 */
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, IdentityRefSchema, Mediation, ToolResultSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import { endEvent } from "../../../objects/controller/events.js";
import { SessionHost } from "../../../objects/session/facade.js";
import { createModelInvoker } from "../../../objects/controller/models.js";
import { echoScript, fakeExecutor, liveTurn, scriptedModels, toolCall, toolDeps, toolHarness, type newLog } from "../support/controller-fixture.js";
import { createSession, descriptor, drain, execReq, setup, sessionOf as session, inject, stateOf } from "../support/session-fixture.js";
import { createTestDb, type TestDb } from "../support/sqljs-db.js";

type Body = MessageInitShape<typeof EventSchema>["body"];

const config = (calls: unknown[]) => new TextEncoder().encode(JSON.stringify({ calls }));
const gatedCall = (id = "g1") => ({ id, tool: "pay", args: { amount: 10 }, mediation: "REQUIRES_APPROVAL" });
const gated = (id = "g1", key = "kg") => toolCall({ id, idempotencyKey: key, mediation: Mediation.REQUIRES_APPROVAL, args: { amount: 10 } });

const turnLogOf = (host: SessionHost) => ({ log: stateOf(host).turnLog() }) as unknown as ReturnType<typeof newLog>;
const ev = (executionId: string, kind: EventKind, body: Body) => create(EventSchema, { executionId, kind, body });

function journal(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => ({ seq: x.seq, event: fromBinary(EventSchema, x.event) }));
}

const kindsOf = (host: SessionHost) => journal(host).map((r) => EventKind[r.event.kind].replace(/^EVENT_/, ""));

/** A session parked through the API: [START, INPUT, TC g1, AR g1 (seq 4), LIFECYCLE(SUSPEND)]. */
async function parkedSession() {
  const ex = fakeExecutor();
  const fx = setup({ tools: toolsHarness }, undefined, { tools: ex.executor });
  await createSession(fx.host, "tools");
  const turn = await drain(fx.host.exec(execReq({ inputs: [userText("pay it")], config: config([gatedCall()]) })));
  expect(turn.failure).toBeUndefined();
  const p = session(fx.host).pendingApproval!;
  expect(p).toMatchObject({ toolCallId: "g1", requestSeq: 4n });
  return { ...fx, ex, p };
}

describe("gate inspection across cuts (checklist §8.14 #89)", () => {
  it("inspect: at the request, the decision, the receipt and END the session reports the execution, pending state and completion, and Approve's exact retry finds the decision (checklist §8.14 #89)", async () => {
    const ex = fakeExecutor();
    const fx = setup({ h: toolHarness([gated()]), tools: toolsHarness }, undefined, { tools: ex.executor });
    await createSession(fx.host, "h");
    const exe = "exec-a";
    // Cut after APPROVAL_REQUEST: pending names exactly the journaled call and request; not completed.
    expect(
      await liveTurn(turnLogOf(fx.host), toolHarness([gated()]), scriptedModels(echoScript), [], { executionId: exe, tools: toolDeps(ex.executor) }),
    ).toMatchObject({ kind: "parked" });
    const rs = journal(fx.host);
    expect(rs.map((r) => r.event.kind)).toEqual([EventKind.EVENT_EXECUTION_START, EventKind.EVENT_TOOL_CALL, EventKind.EVENT_APPROVAL_REQUEST]);
    const call = rs[1]!.event.body;
    expect(call.case === "tool" && call.value).toMatchObject({ id: "g1", idempotencyKey: "kg", mediation: Mediation.REQUIRES_APPROVAL, args: { amount: 10 } });
    expect(session(fx.host)).toMatchObject({ execState: ExecState.EXEC_AWAITING, pendingApproval: { executionId: exe, toolCallId: "g1", requestSeq: 3n } });

    // Cut after APPROVAL_RESULT: decided, so nothing is pending; still not completed.
    const d = fx.host.approve({ executionId: exe, toolCallId: "g1", requestSeq: 3n, approved: true, reason: "ok" });
    expect(d).toMatchObject({ ok: true, value: { decision: { seq: 4n } } });
    expect(session(fx.host).pendingApproval).toBeUndefined();
    expect(session(fx.host).execState).not.toBe(ExecState.EXEC_COMPLETED);
    const original = d.ok ? d.value.decision : undefined;
    const retried = () => {
      const r = fx.host.approve({ executionId: exe, toolCallId: "g1", requestSeq: 3n, approved: true, reason: "ok" });
      return r.ok ? r.value.decision : r;
    };
    expect(retried()).toEqual(original);

    // Cut after TOOL_RESULT (the receipt, no END): still nothing pending, not completed; the decision is still found.
    inject(fx.host, [
      ev(exe, EventKind.EVENT_TOOL_RESULT, {
        case: "result",
        value: create(ToolResultSchema, { id: "g1", output: { ok: true }, approvalRequestSeq: 3n, approvalDecisionSeq: 4n }),
      }),
    ]);
    expect(session(fx.host).pendingApproval).toBeUndefined();
    expect(session(fx.host).execState).not.toBe(ExecState.EXEC_COMPLETED);
    expect(retried()).toEqual(original);

    // At END: completed, nothing pending; the decision is still found; nothing was appended by the retries.
    inject(fx.host, [endEvent(exe, "COMPLETED")]);
    expect(session(fx.host)).toMatchObject({ execState: ExecState.EXEC_COMPLETED });
    expect(session(fx.host).pendingApproval).toBeUndefined();
    expect(retried()).toEqual(original);
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST", "APPROVAL_RESULT", "TOOL_RESULT", "END"]);
    expect(ex.calls).toHaveLength(0);
  });
});

describe("Approve retries (checklist §8.14 #95, #96)", () => {
  it("approve: an identical retry after another writer minted a fence, and after receipt, END and a new turn, returns the same record without appending; the other writer's fence stays current (checklist §8.14 #95)", async () => {
    const { host, p } = await parkedSession();
    const identity = create(IdentityRefSchema, { principal: "alice", issuer: "idp", subject: "s1" });
    const tuple = { executionId: p.executionId, toolCallId: "g1", requestSeq: 4n, approved: true, reason: "ok", identity };
    const d = host.approve(tuple);
    expect(d).toMatchObject({ ok: true, value: { decision: { seq: 5n + 1n } } });
    const first = d.ok ? d.value.decision : undefined;
    const ev0 = fromBinary(EventSchema, first!.event);
    expect(ev0).toMatchObject({ executionId: p.executionId, actor: { principal: "alice", issuer: "idp", subject: "s1" } });
    expect(ev0.body.case === "approvalResult" && ev0.body.value).toMatchObject({ toolCallId: "g1", requestSeq: 4n, approved: true, reason: "ok" });

    // Another writer minted a fence: the retry still returns the record and leaves that fence current.
    const other = stateOf(host).journal.mintFence();
    const n = journal(host).length;
    expect(host.approve(tuple)).toMatchObject({ ok: true, value: { decision: first } });
    expect(journal(host)).toHaveLength(n);
    expect(stateOf(host).journal.fence()).toBe(other);

    // Receipt and END (recovery), then a whole new turn.
    expect(await host.resume()).toMatchObject({ ok: true, value: { execState: ExecState.EXEC_COMPLETED } });
    expect((await drain(host.exec(execReq({ inputs: [userText("next")], harness: "echo" })))).failure).toBeUndefined();
    const fence = stateOf(host).journal.fence();
    const m = journal(host).length;
    expect(host.approve(tuple)).toMatchObject({ ok: true, value: { decision: first } });
    expect(journal(host)).toHaveLength(m);
    expect(stateOf(host).journal.fence()).toBe(fence);
    expect(journal(host).filter((r) => r.event.kind === EventKind.EVENT_APPROVAL_RESULT)).toHaveLength(1);
  });

  it("approve: a negative or zero seq, a changed issuer or subject, and a call-only cut are refused; nothing is appended and the writer's fence is untouched (checklist §8.14 #96)", async () => {
    const { host, p } = await parkedSession();
    const fence = stateOf(host).journal.fence();
    const n = journal(host).length;
    const base = { executionId: p.executionId, toolCallId: "g1", approved: true, reason: "ok" };
    for (const requestSeq of [-4n, -1n, 0n]) {
      expect(host.approve({ ...base, requestSeq })).toMatchObject({ ok: false, reason: "invalid_decision" });
    }
    expect(journal(host)).toHaveLength(n);
    expect(stateOf(host).journal.fence()).toBe(fence);

    const identity = create(IdentityRefSchema, { principal: "alice", issuer: "idp", subject: "s1" });
    expect(host.approve({ ...base, requestSeq: 4n, identity })).toMatchObject({ ok: true });
    const decided = stateOf(host).journal.fence();
    const m = journal(host).length;
    for (const changed of [{ issuer: "other-idp" }, { subject: "s2" }, { principal: "bob" }, { issuer: "", subject: "", principal: "" }]) {
      const id = create(IdentityRefSchema, { principal: "alice", issuer: "idp", subject: "s1", ...changed });
      expect(host.approve({ ...base, requestSeq: 4n, identity: id }), JSON.stringify(changed)).toMatchObject({ ok: false, reason: "invalid_decision" });
    }
    expect(journal(host)).toHaveLength(m);
    expect(stateOf(host).journal.fence()).toBe(decided);

    // A call-only cut (TOOL_CALL of a gated call, no request: a journal this host never writes).
    const fx = setup({ tools: toolsHarness }, undefined, { tools: fakeExecutor().executor });
    await createSession(fx.host, "tools");
    const exe = "exec-c";
    inject(fx.host, [ev(exe, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { harness: "tools", inputCount: 0n } })]);
    const callSeq = inject(fx.host, [ev(exe, EventKind.EVENT_TOOL_CALL, { case: "tool", value: gated() })]);
    const f2 = stateOf(fx.host).journal.fence();
    const k = journal(fx.host).length;
    for (const requestSeq of [callSeq, callSeq + 1n]) {
      expect(fx.host.approve({ executionId: exe, toolCallId: "g1", requestSeq, approved: true, reason: "" })).toMatchObject({
        ok: false,
        reason: "invalid_decision",
      });
    }
    expect(journal(fx.host)).toHaveLength(k);
    expect(stateOf(fx.host).journal.fence()).toBe(f2);
  });
});

/** A SessionHost over `db`, as a Durable Object constructs one after a restart. */
function hostOver(db: TestDb, executor: ReturnType<typeof fakeExecutor>["executor"]) {
  return new SessionHost({
    db,
    now: () => 1_700_000_000_000,
    models: (sessionModel) => createModelInvoker({ sessionModel }),
    directory: async () => undefined,
    harnesses: { get: (n) => ({ echo: echoHarness, tools: toolsHarness })[n], names: () => ["echo", "tools"] },
    erase: async () => undefined,
    tools: executor,
    log: () => undefined,
    setAlarm: async () => undefined,
  });
}

describe("Approve on a cold session (checklist §8.14 #100)", () => {
  it("approve: the decision leaves compute COLD; after the SQLite file is reopened an identical retry with an explicitly empty identity returns the original record (checklist §8.14 #100)", async () => {
    const ex = fakeExecutor();
    let db = createTestDb();
    const host = hostOver(db, ex.executor);
    await createSession(host, "tools");
    expect((await drain(host.exec(execReq({ inputs: [userText("pay")], config: config([gatedCall()]) })))).failure).toBeUndefined();
    const p = session(host).pendingApproval!;
    expect(session(host).computeState).toBe(ComputeState.COMPUTE_COLD);
    const d = host.approve({ executionId: p.executionId, toolCallId: "g1", requestSeq: p.requestSeq, approved: true, reason: "ok" });
    expect(d).toMatchObject({ ok: true, value: { session: { computeState: ComputeState.COMPUTE_COLD } } });
    expect(session(host).computeState).toBe(ComputeState.COMPUTE_COLD);

    const bytes = db.raw.export();
    db.raw.close();
    db = createTestDb(bytes);
    const reopened = hostOver(db, ex.executor);
    expect(session(reopened).computeState).toBe(ComputeState.COMPUTE_COLD);
    const n = journal(reopened).length;
    const retry = reopened.approve({
      executionId: p.executionId,
      toolCallId: "g1",
      requestSeq: p.requestSeq,
      approved: true,
      reason: "ok",
      identity: create(IdentityRefSchema, {}),
    });
    expect(retry.ok && d.ok && retry.value.decision).toEqual(d.ok && d.value.decision);
    expect(journal(reopened)).toHaveLength(n);
    expect(session(reopened).computeState).toBe(ComputeState.COMPUTE_COLD);
    expect(ex.calls).toHaveLength(0);
  });
});

/** A harness that counts Describe calls; one model call per turn. */
function countingHarness(id: string, version: string, fail?: Error) {
  const counts = { describe: 0, run: 0 };
  const harness: Harness = {
    describe: () => {
      counts.describe++;
      if (fail) throw fail;
      const d = descriptor(id);
      d.version = version;
      return d;
    },
    async run(start, sink) {
      counts.run++;
      await sink.model({ model: "echo", messages: [userText("x")] });
      void start;
    },
  };
  return { harness, counts };
}

describe("Describe on Exec (checklist §8.13 #84, #88)", () => {
  it("exec: the harness is described exactly once, and the start marker records the registry alias (not the descriptor id) and the version (checklist §8.13 #84)", async () => {
    const { harness, counts } = countingHarness("descriptor-id", "v7");
    const fx = setup({ alias: harness });
    await createSession(fx.host, "alias");
    counts.describe = 0;
    expect((await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })))).failure).toBeUndefined();
    expect(counts).toEqual({ describe: 1, run: 1 });
    const start = journal(fx.host).find((r) => r.event.kind === EventKind.EVENT_EXECUTION_START)!.event.body;
    expect(start.case === "executionStart" && [start.value.harness, start.value.harnessVersion]).toEqual(["alias", "v7"]);
  });

  it("exec: a Describe that answers an error fails UNAVAILABLE with the cause; nothing runs or is written (checklist §8.13 #88)", async () => {
    const { harness, counts } = countingHarness("d", "1", new Error("describe exploded"));
    const fx = setup({ alias: harness });
    await createSession(fx.host, "alias");
    const before = journal(fx.host).length;
    const out = await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })));
    expect(out.failure).toMatchObject({ reason: "harness_unavailable", message: expect.stringMatching(/describe exploded/) });
    expect(counts.run).toBe(0);
    expect(journal(fx.host)).toHaveLength(before);
  });

  it("resume, audit: a Describe that answers an error runs nothing and writes nothing (checklist §8.13 #88)", async () => {
    const fail = { on: false };
    const counts = { run: 0 };
    const harness: Harness = {
      describe: () => {
        if (fail.on) throw new Error("describe exploded");
        return descriptor("d");
      },
      async run(_s, sink) {
        counts.run++;
        await sink.model({ model: "echo", messages: [userText("x")] });
      },
    };
    const fx = setup({ alias: harness });
    await createSession(fx.host, "alias");
    expect((await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })))).failure).toBeUndefined();
    // An interrupted execution after it (its START only), so Resume has something to recover.
    inject(fx.host, [
      ev("exec-b", EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { harness: "alias", harnessVersion: "t1", inputCount: 0n } }),
    ]);
    const host = fx.host;
    const before = journal(host).length;
    fail.on = true;
    counts.run = 0;
    const r = await host.resume();
    expect(r).toMatchObject({ ok: false });
    expect(counts.run).toBe(0);
    expect(journal(host)).toHaveLength(before);
    const audit = await host.audit(true);
    expect(audit).toMatchObject({ ok: true, value: { replay: { ok: false, modelCalls: 0 } } });
    expect(counts.run).toBe(0);
    expect(journal(host)).toHaveLength(before);
  });
});

describe("a Describe failure on recovery (checklist §8.13 #88)", () => {
  // checklist §8.13 #88: a served harness whose Describe fails is a describe failure that keeps
  // its cause (HarnessDescribeError → UNAVAILABLE), not "this host does not serve" it.
  it("resume: a Describe error is reported as a describe failure with its cause (checklist §8.13 #88)", async () => {
    const fail = { on: false };
    const harness: Harness = {
      describe: () => {
        if (fail.on) throw new Error("describe exploded");
        return descriptor("d");
      },
      run: async (_s, sink) => void (await sink.model({ model: "echo", messages: [userText("x")] })),
    };
    const fx = setup({ alias: harness });
    await createSession(fx.host, "alias");
    inject(fx.host, [
      ev("exec-b", EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { harness: "alias", harnessVersion: "t1", inputCount: 0n } }),
    ]);
    fail.on = true;
    expect(await fx.host.resume()).toMatchObject({ ok: false, reason: "harness_unavailable", message: expect.stringMatching(/describe exploded/) });
  });

  it("resume: a harness that answers Describe with an error (a tunnel harness's answer) is INTERNAL, not retryable; a lost connection stays UNAVAILABLE (checklist §8.13 #88; checklist §8.16 #150)", async () => {
    let answer: Error | undefined;
    const harness: Harness = {
      describe: () => {
        if (answer) throw answer;
        return descriptor("d");
      },
      run: async (_s, sink) => void (await sink.model({ model: "echo", messages: [userText("x")] })),
    };
    const fx = setup({ alias: harness });
    await createSession(fx.host, "alias");
    inject(fx.host, [
      ev("exec-b", EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { harness: "alias", harnessVersion: "t1", inputCount: 0n } }),
    ]);
    const before = journal(fx.host).length;
    answer = new ConnectError("describe refused by the harness", Code.Unknown);
    expect(await fx.host.resume()).toMatchObject({ ok: false, reason: "internal", message: expect.stringMatching(/describe refused by the harness/) });
    answer = new ConnectError("connection lost", Code.Unavailable);
    expect(await fx.host.resume()).toMatchObject({ ok: false, reason: "harness_unavailable" });
    expect(journal(fx.host)).toHaveLength(before);
  });
});
