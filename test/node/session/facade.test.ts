/**
 * The session core in process, on SQLite (sql.js), with the built-in echo harness and test
 * harnesses: the Exec stream's shape, CAS, the overlap guard, deadlines, failures, sealed sinks.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, ExecState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { textOf, userText } from "../../../proto/messages.js";
import type { EventSink, Harness } from "../../../runtimes/harness-spi.js";
import type { Failure } from "../../../objects/session/outcomes.js";
import { SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import type { DirectoryRow } from "../../../objects/directory/directory-store.js";
import { waitFor } from "../support/wait.js";
import { createSession, descriptor, drain, execReq, gatedHarness, kinds, setup } from "../support/session-fixture.js";

function decodeExecState(row: DirectoryRow): ExecState {
  return fromBinary(SessionSchema, row.session).execState;
}

describe("SessionHost", () => {
  it("create: writes metadata only; the session is PENDING with compute NONE and last_seq 0", async () => {
    const { host, reports } = setup();
    const uid = await createSession(host);
    const s = host.get();
    expect(s.ok && s.value).toMatchObject({ lastSeq: 0n, execState: ExecState.EXEC_PENDING, computeState: ComputeState.COMPUTE_NONE });
    expect(s.ok && s.value.metadata?.uid).toBe(uid);
    expect(reports).toHaveLength(1);
  });

  it("get: an unknown session is not found and leaves no storage behind", () => {
    const { db, host } = setup();
    expect(host.get()).toMatchObject({ ok: false, reason: "session_not_found" });
    expect(db.query("SELECT name FROM sqlite_master")).toEqual([]);
  });

  it("exec: streams the session first, then the five echo records after they commit", async () => {
    const { host, reports } = setup();
    await createSession(host);
    const { updates, failure } = await drain(host.exec(execReq({ inputs: [userText("hello")] })));
    expect(failure).toBeUndefined();
    expect(updates[0]!.update.case).toBe("session");
    expect(kinds(updates)).toEqual(["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_MODEL_CALL", "EVENT_OUTPUT", "EVENT_END"]);
    const records = updates.flatMap((u) => (u.update.case === "record" ? [u.update.value] : []));
    const ids = new Set(records.map((r) => r.event!.executionId));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^[0-9a-f]{16}$/);
    const start = records[0]!.event!.body;
    expect(start.case === "executionStart" && start.value).toMatchObject({ inputCount: 1n, harness: "echo", harnessVersion: "1" });
    const out = records[3]!.event!.body;
    expect(out.case === "message" && textOf(out.value)).toBe("echo:hello");
    const end = records[4]!.event!.body;
    expect(end.case === "end" && end.value.state).toBe("COMPLETED");
    const s = host.get();
    expect(s.ok && s.value).toMatchObject({ lastSeq: 5n, execState: ExecState.EXEC_COMPLETED, computeState: ComputeState.COMPUTE_LIVE });
    expect(reports[reports.length - 1]!.headSeq).toBe(5);
    expect(await host.audit(false)).toMatchObject({ ok: true, value: { chain: { ok: true, records: 5n } } });
  });

  it("exec: a short turn reports to the Directory once, at its end; a long one also while it runs", async () => {
    const g = gatedHarness();
    // Turns that are not a burst (directory-reports.test.ts has those).
    const { host, reports } = setup({ gated: g.harness }, undefined, { runningReportMs: 30, directoryBurstMs: 0 });
    await createSession(host);
    const before = reports.length;
    await drain(host.exec(execReq({ inputs: [userText("quick")] })));
    expect(reports.slice(before).map((r) => decodeExecState(r))).toEqual([ExecState.EXEC_COMPLETED]);

    const mid = reports.length;
    const long = host.exec(execReq({ inputs: [userText("slow")], harness: "gated" }));
    await g.started;
    await waitFor("the running report", () => reports.length > mid);
    expect(decodeExecState(reports[mid]!)).toBe(ExecState.EXEC_RUNNING);
    g.release();
    expect((await drain(long)).failure).toBeUndefined();
    expect(reports.slice(mid).map((r) => decodeExecState(r))).toEqual([ExecState.EXEC_RUNNING, ExecState.EXEC_COMPLETED]);
  });

  it("exec: a stale expected_last_seq is ABORTED after the session frame and writes nothing", async () => {
    const { host } = setup();
    await createSession(host);
    await drain(host.exec(execReq({ inputs: [userText("one")], expectedLastSeq: 0n })));
    const { updates, failure } = await drain(host.exec(execReq({ inputs: [userText("two")], expectedLastSeq: 0n })));
    expect(failure).toMatchObject({ reason: "cas_conflict" });
    expect(failure!.message).toContain("expected_last_seq 5");
    expect(updates.map((u) => u.update.case)).toEqual(["session"]);
    expect(host.get().ok && (host.get() as { value: { lastSeq: bigint } }).value.lastSeq).toBe(5n);
  });

  it("exec: three turns without expected_last_seq append at head (last_seq 15)", async () => {
    const { host } = setup();
    await createSession(host);
    for (const t of ["one", "two", "three"]) {
      const { failure } = await drain(host.exec(execReq({ inputs: [userText(t)] })));
      expect(failure).toBeUndefined();
    }
    const s = host.get();
    expect(s.ok && s.value.lastSeq).toBe(15n);
  });

  it("exec: an overlapping turn on a busy session is ABORTED and the first completes", async () => {
    const g = gatedHarness();
    const { host } = setup({ gated: g.harness });
    await createSession(host, "gated");
    const first = host.exec(execReq({ inputs: [userText("a")] }));
    await g.started;
    const second = await drain(host.exec(execReq({ inputs: [userText("b")] })));
    expect(second.failure).toMatchObject({ reason: "session_busy" });
    const live = host.get();
    expect(live.ok && live.value.execState).toBe(ExecState.EXEC_RUNNING);
    g.release();
    const done = await drain(first);
    expect(done.failure).toBeUndefined();
    expect(kinds(done.updates)).toHaveLength(5);
    const s = host.get();
    expect(s.ok && s.value).toMatchObject({ lastSeq: 5n, execState: ExecState.EXEC_COMPLETED });
  });

  it("exec: a past deadline fails with nothing written", async () => {
    const { host, now } = setup();
    await createSession(host);
    const past = BigInt(Math.floor(now() / 1000) - 5);
    const { updates, failure } = await drain(host.exec(execReq({ inputs: [userText("late")], deadlineUnix: past })));
    expect(failure).toMatchObject({ reason: "deadline_exceeded" });
    expect(updates).toHaveLength(1);
    expect(host.get().ok && (host.get() as { value: { lastSeq: bigint } }).value.lastSeq).toBe(0n);
  });

  it("exec: an unknown harness override is refused before any frame", async () => {
    const { host } = setup();
    await createSession(host);
    const r = await host.exec(execReq({ inputs: [userText("x")], harness: "nope" }));
    expect(r).toMatchObject({ ok: false, reason: "unknown_harness" });
    expect((r as Failure).message).toContain("echo");
  });

  it("exec: a failing harness journals ERROR and the session reports FAILED", async () => {
    const failing: Harness = {
      describe: () => descriptor("failing"),
      async run() {
        throw new Error("boom in the harness");
      },
    };
    const { host } = setup({ failing });
    await createSession(host, "failing");
    const { updates, failure } = await drain(host.exec(execReq({ inputs: [userText("x")] })));
    expect(failure).toMatchObject({ reason: "turn_failed" });
    expect(failure!.message).toContain("boom in the harness");
    expect(kinds(updates)).toEqual(["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_ERROR"]);
    const s = host.get();
    expect(s.ok && s.value.execState).toBe(ExecState.EXEC_FAILED);
  });

  it("exec: a memory-snapshot harness is unplaceable on the built-in runtime and nothing is written", async () => {
    const memory: Harness = { describe: () => descriptor("counter", Resumability.REQUIRES_MEMORY_SNAPSHOT), run: async () => {} };
    const { host } = setup({ memory });
    await createSession(host, "memory");
    const { failure } = await drain(host.exec(execReq({ inputs: [userText("x")] })));
    expect(failure).toMatchObject({ reason: "unplaceable" });
    expect(host.get().ok && (host.get() as { value: { lastSeq: bigint } }).value.lastSeq).toBe(0n);
  });

  it("placement logs: one INFO line per admission with decision, harness id, runtime, duration and session; no content", async () => {
    const memory: Harness = { describe: () => descriptor("counter", Resumability.REQUIRES_MEMORY_SNAPSHOT), run: async () => {} };
    const { host, logs } = setup({ memory });
    const ok = await createSession(host, "echo");
    await drain(host.exec(execReq({ inputs: [userText("secret words")] })));
    const admitted = logs.filter((l) => l.msg === "placement");
    expect(admitted).toEqual([
      {
        level: "info",
        msg: "placement",
        component: "placer",
        request_id: "",
        op: "admit",
        decision: "admitted",
        tenant: "default",
        session: ok,
        harness: "echo",
        harness_id: "echo",
        runtime: "builtin",
        duration_ms: 0,
      },
    ]);
    expect(JSON.stringify(logs)).not.toContain("secret words");

    const { host: h2, logs: l2 } = setup({ memory });
    const refused = await createSession(h2, "memory");
    await drain(h2.exec(execReq({ inputs: [userText("x")] })));
    expect(l2.filter((l) => l.msg === "placement")).toEqual([
      {
        level: "info",
        msg: "placement",
        component: "placer",
        request_id: "",
        op: "admit",
        decision: "refused",
        tenant: "default",
        session: refused,
        harness: "memory",
        harness_id: "counter",
        runtime: "builtin",
        duration_ms: 0,
      },
    ]);
    expect(JSON.stringify(l2)).not.toMatch(/fence/i);
  });

  it("tail: one INFO line per follower that leaves, naming the session, why and how many records; a delete ends the rest as gone", async () => {
    const { host, logs } = setup();
    const uid = await createSession(host, "echo");
    await drain(host.exec(execReq({ inputs: [userText("secret words")] })));
    // To the head, as a binary Tail's whole answer: five records, then the end and the ending.
    const head = host.tail(1n, false, "connect");
    if (!head.ok) throw new Error(head.message);
    const bytes = new Uint8Array(await new Response(head.value).arrayBuffer());
    expect([...bytes.subarray(bytes.length - 7)]).toEqual([2, 0, 0, 0, 2, 123, 125]);
    const live = host.tail(1n, true);
    if (!live.ok) throw new Error(live.message);
    const reader = live.value.getReader();
    // Caught up: the five records and the heartbeat, in one chunk.
    expect((await reader.read()).value!.length).toBeGreaterThan(0);
    expect((await host.delete(async () => undefined)).ok).toBe(true);
    while (!(await reader.read()).done);
    expect(logs.filter((l) => l.msg === "follow ended")).toEqual([
      { level: "info", msg: "follow ended", component: "session", session: uid, reason: "head", duration_ms: expect.any(Number), records: 5 },
      { level: "info", msg: "follow ended", component: "session", session: uid, reason: "gone", duration_ms: expect.any(Number), records: 5 },
    ]);
    expect(JSON.stringify(logs)).not.toContain("secret words");
  });

  it("placement logs: admitting the same built-in harness again writes no line; any other decision does, and the next admission after it too", async () => {
    const memory: Harness = { describe: () => descriptor("counter", Resumability.REQUIRES_MEMORY_SNAPSHOT), run: async () => {} };
    const { host, logs } = setup({ memory });
    await createSession(host, "echo");
    const turn = async (harness?: string) => {
      await drain(host.exec(execReq({ inputs: [userText("x")], harness })));
      return logs.filter((l) => l.msg === "placement").map((l) => `${l.harness}:${l.decision}`);
    };
    expect(await turn()).toEqual(["echo:admitted"]);
    expect(await turn()).toEqual(["echo:admitted"]);
    expect(await turn("memory")).toEqual(["echo:admitted", "memory:refused"]);
    expect(await turn()).toEqual(["echo:admitted", "memory:refused", "echo:admitted"]);
    expect(await turn()).toEqual(["echo:admitted", "memory:refused", "echo:admitted"]);
  });

  it("exec: a sink kept after Run returns is sealed and writes nothing", async () => {
    let kept: EventSink | undefined;
    const leaky: Harness = {
      describe: () => descriptor("leaky"),
      async run(_start, sink) {
        kept = sink;
        await sink.output("inside");
      },
    };
    const { host } = setup({ leaky });
    await createSession(host, "leaky");
    await drain(host.exec(execReq({ inputs: [] })));
    await expect(kept!.output("after")).rejects.toThrow(/closed/);
    const s = host.get();
    expect(s.ok && s.value.lastSeq).toBe(3n);
  });

  it("exec: the first turn's history is empty (it never includes the turn's own records)", async () => {
    const histories: number[] = [];
    const probe: Harness = {
      describe: () => descriptor("probe"),
      async run(start, sink) {
        histories.push(start.history.length);
        await sink.output("ok");
      },
    };
    const { host } = setup({ probe });
    await createSession(host, "probe");
    await drain(host.exec(execReq({ inputs: [userText("one")] })));
    await drain(host.exec(execReq({ inputs: [userText("two")] })));
    expect(histories).toEqual([0, 4]);
  });

  it("exec: config bytes and the cursor reach the harness and EXECUTION_START byte-exact; history is prior events", async () => {
    const seen: { config?: Uint8Array; cursor?: bigint; history?: string[] } = {};
    const probe: Harness = {
      describe: () => descriptor("probe"),
      async run(start, sink) {
        seen.config = start.config;
        seen.cursor = start.resumeFromSeq;
        seen.history = start.history.map((e) => EventKind[e.kind]);
        start.config[0] = 0x7a; // a harness mutating its copy must not change the journal
        await sink.output("ok");
      },
    };
    const { host } = setup({ probe });
    await createSession(host, "probe");
    await drain(host.exec(execReq({ inputs: [userText("first")] })));
    const config = new Uint8Array([0, 255, 32, 10, 9]);
    const { updates } = await drain(host.exec(execReq({ inputs: [], config, resumeFromSeq: 42n })));
    expect(seen.config).toEqual(new Uint8Array([0x7a, 255, 32, 10, 9]));
    expect(seen.cursor).toBe(42n);
    expect(seen.history).toEqual(["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_OUTPUT", "EVENT_END"]);
    const first = updates.find((u) => u.update.case === "record")!;
    const ev = first.update.case === "record" ? first.update.value.event! : undefined;
    expect(ev?.body.case === "executionStart" && ev.body.value).toMatchObject({ config, resumeFromSeq: 42n, inputCount: 0n });
    const stored = host.read(5n, 5n, 1);
    expect(stored.ok && fromBinary(EventSchema, stored.value[0]!.event).body.value).toMatchObject({ config });
  });
});
