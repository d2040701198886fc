/**
 * Admission and recovery edges in process, on sql.js (docs/behaviour.md §6.1, §4.9; checklist §8.16
 * #150, #152, checklist §8.17 #177, #181, #191): the caller's Cancel or deadline during admission keeps its
 * cause, an answered Describe error is neither that nor unavailability, a silent harness on the live
 * re-check is unavailable within the bound, a Resume overlapping an Exec's placement is ABORTED
 * before it looks at anything, a malformed log makes Resume FAILED_PRECONDITION with its detail,
 * a refused recovery without an executor takes no snapshot, and Approve on an unknown session
 * creates nothing (checklist §8.17 #186) nor needs the recorded harness to decide (#187).
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import { EventKind, EventSchema, IdentityRefSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import type { HarnessDescriptor } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, ExecState, type SnapshotRef } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { createBuiltinRuntime } from "../../../runtimes/builtin/runtime.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import type { Runtime } from "../../../runtimes/runtime-spi.js";
import { createModelInvoker } from "../../../objects/controller/models.js";
import { Journal } from "../../../objects/journal/journal.js";
import { SessionHost } from "../../../objects/session/facade.js";
import type { PlacingRuntime } from "../../../objects/session/state.js";
import { fakeBackend } from "../support/fake-backend.js";
import { createSession, descriptor, drain, execReq, setup, sessionOf as session } from "../support/session-fixture.js";

const TOOLS = toolsHarness.describe() as HarnessDescriptor;

const kindsOf = (host: SessionHost) => {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => EventKind[fromBinary(EventSchema, x.event).kind].replace(/^EVENT_/, ""));
};

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((ok) => (resolve = ok));
  return { promise, resolve };
}

/** A built-in harness whose Describe answers only when the test says so. */
function heldDescribe() {
  const asked = deferred();
  const answer = deferred();
  const harness: Harness = {
    describe: async () => {
      asked.resolve();
      await answer.promise;
      return descriptor("held");
    },
    run: (start, sink) => toolsHarness.run(start, sink),
  };
  return { harness, asked: asked.promise, answer: answer.resolve };
}

describe("admission (checklist §8.16 #150)", () => {
  it("admission (checklist §8.16 #150): a Cancel while the harness is being described ends the Exec CANCELED and writes nothing", async () => {
    const held = heldDescribe();
    const fx = setup({ held: held.harness });
    await createSession(fx.host, "held");
    const turn = drain(fx.host.exec(execReq({ inputs: [userText("hi")] })));
    await held.asked;
    const canceled = fx.host.cancel("", "USER");
    held.answer();
    expect((await turn).failure).toMatchObject({ reason: "canceled" });
    expect(await canceled).toMatchObject({ ok: true });
    expect(kindsOf(fx.host)).toEqual([]);
    expect(session(fx.host)).toMatchObject({ lastSeq: 0n, execState: ExecState.EXEC_PENDING, computeState: ComputeState.COMPUTE_NONE });
  });

  it("admission (checklist §8.16 #150): the caller's deadline passing while the harness is being described keeps its cause (DEADLINE_EXCEEDED, not CANCELED) and writes nothing", async () => {
    const held = heldDescribe();
    const fx = setup({ held: held.harness });
    await createSession(fx.host, "held");
    // The deadline is 1 ms away (the clock is a fake one, the turn's timer a real one).
    fx.tick(999);
    const turn = drain(fx.host.exec(execReq({ inputs: [userText("hi")], deadlineUnix: BigInt(Math.ceil(fx.now() / 1000)) })));
    await held.asked;
    // The deadline's 1 ms timer was set before this one, so it has fired when this one does.
    await new Promise((ok) => setTimeout(ok, 20));
    held.answer();
    const failed = (await turn).failure;
    expect(failed).toMatchObject({ reason: "deadline_exceeded" });
    expect(failed!.message).toContain("nothing was written");
    expect(kindsOf(fx.host)).toEqual([]);
  });

  it("admission (checklist §8.16 #150): a backend that answers Describe with an error is INTERNAL (neither unavailable nor the caller's cancellation), on Exec and Resume, writing nothing; an unavailable one is UNAVAILABLE", async () => {
    const backend = fakeBackend(TOOLS);
    let answer: Error = new ConnectError("not allowed to describe pod-tools", Code.PermissionDenied);
    const runtime: PlacingRuntime = { ...backend.runtime, describe: async () => (backend.calls.push("describe"), Promise.reject(answer)) };
    const fx = setup({}, undefined, { remote: async (name) => (name === "pod-tools" ? { harness: toolsHarness, registered: true, runtime } : undefined) });
    await createSession(fx.host, "pod-tools");

    const turn = await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })));
    expect(turn.failure).toMatchObject({ reason: "internal" });
    expect(turn.failure!.message).toContain("PermissionDenied: not allowed to describe pod-tools");
    expect(await fx.host.resume()).toMatchObject({ ok: false, reason: "internal" });
    expect(fx.logs).toContainEqual(expect.objectContaining({ msg: "placement", op: "admit", decision: "error", level: "warn", harness: "pod-tools" }));

    answer = new ConnectError("fake-pod is unreachable", Code.Unavailable);
    expect((await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })))).failure).toMatchObject({ reason: "harness_unavailable" });
    expect(backend.calls).toEqual(["describe", "describe", "describe"]);
    expect(kindsOf(fx.host)).toEqual([]);
  });
});

describe("the live re-check's bound (checklist §8.16 #152)", () => {
  afterEach(() => void vi.useRealTimers());

  it("recheck (checklist §8.16 #152): a placed harness that never answers Describe on its own connection makes Exec and Resume unavailable after the 10 s bound, writing nothing", async () => {
    const backend = fakeBackend(TOOLS);
    const mode = { silent: false, asked: deferred() };
    const placed: Harness = {
      describe: () => {
        mode.asked.resolve();
        return mode.silent ? new Promise<never>(() => undefined) : TOOLS;
      },
      run: (start, sink) => toolsHarness.run(start, sink),
    };
    const fx = setup({}, undefined, {
      remote: async (name) => (name === "pod-tools" ? { harness: placed, registered: true, runtime: backend.runtime } : undefined),
    });
    await createSession(fx.host, "pod-tools");
    expect((await drain(fx.host.exec(execReq({ inputs: [userText("one")] })))).failure).toBeUndefined();
    const head = session(fx.host).lastSeq;

    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    mode.silent = true;
    for (const op of ["exec", "resume"] as const) {
      mode.asked = deferred();
      const pending = op === "exec" ? drain(fx.host.exec(execReq({ inputs: [userText("two")] }))).then((t) => t.failure) : fx.host.resume();
      await mode.asked.promise;
      // Nothing is decided before the bound; at it, the re-check gives up.
      await vi.advanceTimersByTimeAsync(9_999);
      let settled = false;
      void pending.then(() => (settled = true));
      await Promise.resolve();
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const failed = await pending;
      expect(failed).toMatchObject({ ok: false, reason: "harness_unavailable" });
      expect(failed && !failed.ok && failed.message).toMatch(/did not describe itself on its connection \(no answer within 10 s\)/);
    }
    expect(fx.logs.filter((l) => l.op === "recheck" && l.decision === "unavailable")).toHaveLength(2);
    expect(session(fx.host).lastSeq).toBe(head);
  });
});

describe("Resume during an Exec's placement (checklist §8.17 #177)", () => {
  it("overlap (checklist §8.17 #177): a Resume while the Exec is inside the backend's Create is ABORTED and touches neither the journal nor compute; after the Exec, Resume succeeds", async () => {
    const backend = fakeBackend(TOOLS);
    const inCreate = deferred();
    const release = deferred();
    const runtime: PlacingRuntime = {
      ...backend.runtime,
      create: async (spec) => {
        inCreate.resolve();
        await release.promise;
        return backend.runtime.create(spec);
      },
    };
    const fx = setup({}, undefined, { remote: async (name) => (name === "pod-tools" ? { harness: toolsHarness, registered: true, runtime } : undefined) });
    await createSession(fx.host, "pod-tools");
    const turn = drain(fx.host.exec(execReq({ inputs: [userText("hi")] })));
    await inCreate.promise;
    const calls = [...backend.calls];

    expect(await fx.host.resume()).toMatchObject({ ok: false, reason: "session_busy" });
    expect(backend.calls).toEqual(calls);
    expect(kindsOf(fx.host)).toEqual([]);

    release.resolve();
    expect((await turn).failure).toBeUndefined();
    expect(await fx.host.resume()).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_LIVE } });
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "OUTPUT", "END", "LIFECYCLE"]);
  });
});

describe("Resume of a malformed log (checklist §8.17 #181)", () => {
  const start = (id: string, inputCount: bigint) =>
    create(EventSchema, {
      executionId: id,
      kind: EventKind.EVENT_EXECUTION_START,
      body: { case: "executionStart", value: { inputCount, harness: "echo", harnessVersion: "1" } },
    });
  const input = (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText("x") } });
  const output = (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: userText("o") } });
  const end = (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } });

  /** A session whose journal holds `events` (written by something else), opened afresh. */
  async function withLog(events: Event[]) {
    const fx = setup();
    await createSession(fx.host);
    const w = new Journal(fx.db).append(events, { fence: 0n, mintFence: true });
    if (!w.ok) throw new Error(w.reason);
    const host = new SessionHost({
      db: fx.db,
      now: fx.now,
      models: (m) => createModelInvoker({ sessionModel: m }),
      directory: async () => undefined,
      erase: async () => undefined,
      log: () => undefined,
    });
    return host;
  }

  async function expectRefused(events: Event[]) {
    const host = await withLog(events);
    const before = kindsOf(host);
    const r = await host.resume();
    expect(r).toMatchObject({ ok: false, reason: "invalid_log" });
    const msg = !r.ok ? r.message : "";
    expect(msg).toMatch(/cannot be recovered as it stands: .+/);
    expect(msg).not.toMatch(/Exec again|all of the turn's inputs/);
    expect(kindsOf(host)).toEqual(before);
    return msg;
  }

  it("resume (checklist §8.17 #181): a record without an execution id fails FAILED_PRECONDITION with the detail and no incomplete-input guidance, changing nothing", async () => {
    const msg = await expectRefused([
      start("a", 1n),
      input("a"),
      create(EventSchema, { kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: userText("o") } }),
    ]);
    expect(msg).toContain("record 3 (EVENT_OUTPUT) has no execution id");
  });

  // resumeLatest checks the latest execution's inputs before its finished-turn no-op, so a
  // count-short completed turn is refused as malformed rather than resumed.
  it("resume (checklist §8.17 #181): a completed turn with fewer inputs than it declared fails FAILED_PRECONDITION with the detail and no incomplete-input guidance, changing nothing", async () => {
    await expectRefused([start("a", 2n), input("a"), output("a"), end("a")]);
  });
});

describe("approve without an executor (checklist §8.17 #191)", () => {
  it("approve (checklist §8.17 #191): approving then resuming without an executor fails missing_executor, keeps the decision, clears the pending approval and takes no snapshot", async () => {
    const inner = createBuiltinRuntime();
    const calls: string[] = [];
    const runtime: Runtime = {
      ...inner,
      create: (spec) => (calls.push("create"), inner.create(spec)),
      restore: (ref: SnapshotRef, spec) => (calls.push("restore"), inner.restore(ref, spec)),
      snapshot: (inc, kind) => (calls.push(`snapshot ${kind}`), inner.snapshot(inc, kind)),
      stop: (inc) => (calls.push("stop"), inner.stop(inc)),
    };
    const fx = setup({ tools: toolsHarness }, undefined, { runtime });
    await createSession(fx.host, "tools");
    const config = new TextEncoder().encode(JSON.stringify({ calls: [{ id: "g1", tool: "pay", mediation: "REQUIRES_APPROVAL" }] }));
    await drain(fx.host.exec(execReq({ inputs: [userText("pay")], config })));
    const p = session(fx.host).pendingApproval!;
    const approved = fx.host.approve({ executionId: p.executionId, toolCallId: p.toolCallId, requestSeq: p.requestSeq, approved: true, reason: "ok" });
    expect(approved.ok).toBe(true);
    const head = session(fx.host).lastSeq;
    const before = calls.length;

    const r = await fx.host.resume();
    expect(r).toMatchObject({ ok: false, reason: "missing_executor" });
    expect(!r.ok && r.message).toContain("no tool executor");
    expect(calls.slice(before).filter((c) => c.startsWith("snapshot"))).toEqual([]);
    expect(session(fx.host).lastSeq).toBe(head);
    expect(session(fx.host).pendingApproval).toBeUndefined();
    expect(kindsOf(fx.host).at(-1)).toBe("APPROVAL_RESULT");
  });
});

describe("approve on an unknown session (checklist §8.17 #186)", () => {
  it("approve (checklist §8.17 #186): an unknown session is not found; no storage is created and no compute touched", () => {
    const inner = createBuiltinRuntime();
    const calls: string[] = [];
    const runtime: Runtime = {
      ...inner,
      create: (spec) => (calls.push("create"), inner.create(spec)),
      snapshot: (i, k) => (calls.push("snapshot"), inner.snapshot(i, k)),
    };
    const fx = setup({}, undefined, { runtime });
    const r = fx.host.approve({ executionId: "e", toolCallId: "t", requestSeq: 3n, approved: true, reason: "" });
    expect(r).toMatchObject({ ok: false, reason: "session_not_found" });
    expect(fx.db.query("SELECT name FROM sqlite_master")).toEqual([]);
    expect(calls).toEqual([]);
    expect(fx.host.get()).toMatchObject({ ok: false, reason: "session_not_found" });
  });
});

describe("approve when the recorded harness is gone (checklist §8.17 #187)", () => {
  it("approve (checklist §8.17 #187): with the recorded harness no longer served, Approve still commits the decision with the caller as actor, an exact retry returns it, a changed one is refused, and no compute is used", async () => {
    const backend = fakeBackend(TOOLS);
    const serving = { on: true };
    const fx = setup({}, undefined, {
      remote: async (name) => (serving.on && name === "pod-tools" ? { harness: toolsHarness, registered: true, runtime: backend.runtime } : undefined),
    });
    await createSession(fx.host, "pod-tools");
    const config = new TextEncoder().encode(JSON.stringify({ calls: [{ id: "g1", tool: "pay", mediation: "REQUIRES_APPROVAL" }] }));
    await drain(fx.host.exec(execReq({ inputs: [userText("pay")], config })));
    const p = session(fx.host).pendingApproval!;
    expect(p).toBeDefined();
    serving.on = false;
    const calls = backend.calls.length;
    const head = session(fx.host).lastSeq;

    const d = {
      executionId: p.executionId,
      toolCallId: p.toolCallId,
      requestSeq: p.requestSeq,
      approved: true,
      reason: "ok",
      identity: create(IdentityRefSchema, { principal: "user:alice" }),
    };
    const approved = fx.host.approve(d);
    expect(approved.ok).toBe(true);
    const decided = approved.ok ? approved.value : undefined;
    expect(decided!.decision.seq).toBe(head + 1n);
    expect(fromBinary(EventSchema, decided!.decision.event).actor?.principal).toBe("user:alice");
    expect(decided!.session.pendingApproval).toBeUndefined();
    const retried = fx.host.approve(d);
    expect(retried.ok && retried.value.decision.hash).toBe(decided!.decision.hash);
    expect(fx.host.approve({ ...d, reason: "changed" })).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(fx.host.approve({ ...d, approved: false })).toMatchObject({ ok: false, reason: "invalid_decision" });
    expect(session(fx.host).lastSeq).toBe(head + 1n);
    expect(backend.calls.length).toBe(calls);
  });
});
