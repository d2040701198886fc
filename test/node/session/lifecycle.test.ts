/**
 * Session lifecycle in process (issue 4; docs/behaviour.md §2.9, §4.7-4.9): Suspend and Resume, Cancel,
 * DeleteSession, and the fork steps the Worker orchestrates, on SQLite (sql.js).
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { contentHash } from "../../../proto/canon.js";
import { EventKind, EventSchema, Lifecycle_Kind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../../../proto/ids.js";
import { userText } from "../../../proto/messages.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import type { ModelInvoker } from "../../../objects/controller/models.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import { createSession, descriptor, drain, execReq, gatedHarness, kinds, setup, sessionOf as session } from "../support/session-fixture.js";

function journal(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => ({ ...x, decoded: fromBinary(EventSchema, x.event) }));
}

const lifecycleKind = (host: SessionHost, i: number) => {
  const b = journal(host)[i]!.decoded.body;
  return b.case === "lifecycle" ? b.value : undefined;
};

/** A model that answers only when its call is aborted (a slow provider). */
function slowModels(): ModelInvoker & { started: Promise<void> } {
  let started!: () => void;
  const startedP = new Promise<void>((ok) => (started = ok));
  return {
    started: startedP,
    resolve: (m) => m || "slow",
    serves: () => true,
    invoke: (_req, opts) =>
      new Promise((_ok, fail) => {
        started();
        opts.signal.addEventListener("abort", () => fail(opts.signal.reason), { once: true });
      }),
    calls: 0,
  };
}

const modelCaller: Harness = {
  describe: () => descriptor("caller"),
  run: async (_s, sink) => void (await sink.model({ model: "slow", messages: [userText("x")] })),
};

describe("Suspend and Resume", () => {
  it("suspend: journals SUSPEND with the built-in snapshot ref and reports COLD; resume journals RESUME and LIVE", async () => {
    const { host } = setup();
    const uid = await createSession(host);
    await drain(host.exec(execReq({ inputs: [userText("hi")] })));
    const suspended = await host.suspend();
    expect(suspended).toMatchObject({ ok: true, value: { lastSeq: 6n, computeState: ComputeState.COMPUTE_COLD } });
    expect(lifecycleKind(host, 5)).toMatchObject({ kind: Lifecycle_Kind.LIFECYCLE_SUSPEND, snapshotLocal: uid, snapshotMemory: false });
    expect(journal(host)[5]!.decoded.executionId).toBe("");
    const resumed = await host.resume();
    expect(resumed).toMatchObject({ ok: true, value: { lastSeq: 7n, computeState: ComputeState.COMPUTE_LIVE, execState: ExecState.EXEC_COMPLETED } });
    expect(lifecycleKind(host, 6)?.kind).toBe(Lifecycle_Kind.LIFECYCLE_RESUME);
    expect((await host.audit(false)).ok && (await host.audit(false))).toMatchObject({ value: { chain: { ok: true } } });
  });

  it("suspend: works on a session that never ran", async () => {
    const { host } = setup();
    await createSession(host);
    expect(await host.suspend()).toMatchObject({ ok: true, value: { lastSeq: 1n, computeState: ComputeState.COMPUTE_COLD } });
  });

  it("suspend: never interrupts a turn (ABORTED while one runs), and succeeds after it", async () => {
    const g = gatedHarness();
    const { host } = setup({ gated: g.harness });
    await createSession(host, "gated");
    const turn = host.exec(execReq({ inputs: [userText("a")] }));
    await g.started;
    expect(await host.suspend()).toMatchObject({ ok: false, reason: "session_busy" });
    expect(await host.resume()).toMatchObject({ ok: false, reason: "session_busy" });
    g.release();
    await drain(turn);
    expect(session(host).lastSeq).toBe(5n);
    expect((await host.suspend()).ok).toBe(true);
  });
});

describe("Cancel", () => {
  it("cancel: a turn in a slow model call ends END{CANCELED} + LIFECYCLE(CANCEL) and nothing after", async () => {
    const models = slowModels();
    const { host } = setup({ caller: modelCaller }, () => models);
    await createSession(host, "caller");
    const turn = drain(host.exec(execReq({ inputs: [userText("x")] })));
    await models.started;
    const canceled = await host.cancel("", "USER");
    expect(canceled).toMatchObject({ ok: true, value: { execState: ExecState.EXEC_CANCELED, lastSeq: 5n } });
    const { updates, failure } = await turn;
    expect(failure).toMatchObject({ reason: "canceled" });
    expect(kinds(updates)).toEqual(["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_MODEL_CALL", "EVENT_END", "EVENT_LIFECYCLE"]);
    const end = journal(host)[3]!.decoded.body;
    expect(end.case === "end" && end.value.state).toBe("CANCELED");
    expect(lifecycleKind(host, 4)).toMatchObject({ kind: Lifecycle_Kind.LIFECYCLE_CANCEL, detail: "USER" });
    // A canceled turn is terminal: Resume re-drives nothing and only adds its marker.
    const resumed = await host.resume();
    expect(resumed.ok && resumed.value.lastSeq).toBe(6n);
    expect(journal(host).map((r) => EventKind[r.decoded.kind])).toEqual([
      "EVENT_EXECUTION_START",
      "EVENT_INPUT",
      "EVENT_MODEL_CALL",
      "EVENT_END",
      "EVENT_LIFECYCLE",
      "EVENT_LIFECYCLE",
    ]);
  });

  it("cancel: does not wait on a harness that ignores its signal; the harness can write nothing after", async () => {
    let release!: () => void;
    let running!: () => void;
    const started = new Promise<void>((ok) => (running = ok));
    const stubborn: Harness = {
      describe: () => descriptor("stubborn"),
      async run(_s, sink) {
        running();
        await new Promise<void>((ok) => (release = ok));
        await sink.output("too late").catch(() => undefined);
      },
    };
    const { host } = setup({ stubborn });
    await createSession(host, "stubborn");
    const turn = drain(host.exec(execReq({ inputs: [] })));
    await started;
    expect((await host.cancel("", "TIMEOUT")).ok).toBe(true);
    release();
    await turn;
    await new Promise((ok) => setTimeout(ok, 10));
    expect(journal(host).map((r) => EventKind[r.decoded.kind])).toEqual(["EVENT_EXECUTION_START", "EVENT_END", "EVENT_LIFECYCLE"]);
  });

  it("cancel: naming another execution refuses and changes nothing; a bad reason is invalid", async () => {
    const g = gatedHarness();
    const { host } = setup({ gated: g.harness });
    await createSession(host, "gated");
    const turn = drain(host.exec(execReq({ inputs: [userText("a")] })));
    await g.started;
    expect(await host.cancel("0000000000000000", "USER")).toMatchObject({ ok: false, reason: "not_running" });
    expect(await host.cancel("", "BECAUSE")).toMatchObject({ ok: false, reason: "invalid_request" });
    g.release();
    expect((await turn).failure).toBeUndefined();
    expect(await host.cancel("", "USER")).toMatchObject({ ok: false, reason: "not_running" });
  });

  it("cancel: closes an interrupted execution so Resume will not re-drive it", async () => {
    const failing: Harness = { describe: () => descriptor("failing"), run: async () => Promise.reject(new Error("boom")) };
    const { host } = setup({ failing });
    await createSession(host, "failing");
    await drain(host.exec(execReq({ inputs: [userText("a")] })));
    expect(session(host).execState).toBe(ExecState.EXEC_FAILED);
    expect(await host.cancel("", "")).toMatchObject({ ok: true, value: { execState: ExecState.EXEC_CANCELED } });
    const resumed = await host.resume();
    expect(resumed.ok).toBe(true);
    expect(journal(host).map((r) => EventKind[r.decoded.kind])).toEqual([
      "EVENT_EXECUTION_START",
      "EVENT_INPUT",
      "EVENT_ERROR",
      "EVENT_END",
      "EVENT_LIFECYCLE",
      "EVENT_LIFECYCLE",
    ]);
  });
});

describe("DeleteSession", () => {
  it("delete: tombstones with the final head, erases every table, and the uid is then unknown", async () => {
    const { host, db } = setup();
    await createSession(host);
    await drain(host.exec(execReq({ inputs: [userText("hi")] })));
    const head = journal(host)[4]!.hash;
    let tomb: { seq: bigint; hash: string } | undefined;
    const r = await host.delete(async (final, hash) => void (tomb = { seq: final.lastSeq, hash }));
    expect(r).toMatchObject({ ok: true, value: { lastSeq: 5n } });
    expect(tomb).toEqual({ seq: 5n, hash: head });
    expect(db.query("SELECT name FROM sqlite_master WHERE type = 'table'")).toEqual([]);
    expect(host.get()).toMatchObject({ ok: false, reason: "session_not_found" });
    expect(await host.exec(execReq({ inputs: [userText("again")] }))).toMatchObject({ ok: false, reason: "session_not_found" });
    expect(host.read(1n, 0n, 10)).toMatchObject({ ok: false, reason: "session_not_found" });
  });

  it("delete: refused while a turn runs", async () => {
    const g = gatedHarness();
    const { host } = setup({ gated: g.harness });
    await createSession(host, "gated");
    const turn = drain(host.exec(execReq({ inputs: [userText("a")] })));
    await g.started;
    expect(await host.delete(async () => undefined)).toMatchObject({ ok: false, reason: "session_busy" });
    g.release();
    await turn;
  });
});

describe("fork steps", () => {
  async function parentWithTurns(n: number) {
    const p = setup();
    const uid = await createSession(p.host);
    for (let i = 0; i < n; i++) await drain(p.host.exec(execReq({ inputs: [userText(`turn ${i}`)] })));
    return { ...p, uid };
  }

  async function forkChild(parent: SessionHost, parentUid: string, atSeq: bigint) {
    const src = await parent.forkSource(atSeq);
    if (!src.ok) throw new Error(src.message);
    const child = setup();
    const uid = mintSessionUid();
    const statics = create(SessionSchema, { metadata: { project: "default", name: "c" }, harness: "echo", parentUid, forkSeq: src.value.atSeq });
    expect(child.host.forkBegin("default", uid, statics).ok).toBe(true);
    for (let from = 1n; from <= src.value.atSeq; ) {
      const page = parent.read(from, src.value.atSeq, 3);
      if (!page.ok) throw new Error(page.message);
      expect(child.host.forkSeed(page.value).ok).toBe(true);
      from = page.value[page.value.length - 1]!.seq + 1n;
    }
    const sealed = child.host.forkFinish(src.value.atSeq, src.value.states);
    if (!sealed.ok) throw new Error(sealed.message);
    return { ...child, uid, sealed: sealed.value };
  }

  it("fork: the child's prefix is the parent's verbatim and its FORK marker links to the parent's hash at the fork seq", async () => {
    const p = await parentWithTurns(3);
    const c = await forkChild(p.host, p.uid, 7n);
    const parentRecords = journal(p.host);
    const childRecords = journal(c.host);
    expect(childRecords).toHaveLength(8);
    for (let i = 0; i < 7; i++) {
      expect(childRecords[i]!.hash).toBe(parentRecords[i]!.hash);
      expect(childRecords[i]!.event).toEqual(parentRecords[i]!.event);
    }
    const marker = childRecords[7]!;
    expect(marker.prevHash).toBe(parentRecords[6]!.hash);
    expect(marker.hash).toBe(contentHash(marker.decoded, marker.prevHash, 8n));
    expect(marker.decoded.body.case === "lifecycle" && marker.decoded.body.value).toMatchObject({ kind: Lifecycle_Kind.LIFECYCLE_FORK, detail: "parent@7" });
    expect(session(c.host)).toMatchObject({ lastSeq: 8n, computeState: ComputeState.COMPUTE_COLD, parentUid: p.uid, forkSeq: 7n });
    expect((await c.host.audit(true)).ok && (await c.host.audit(true))).toMatchObject({
      value: { chain: { ok: true }, replay: { ok: true, outputs: ["echo:turn 0"] } },
    });
  });

  it("fork: a turn on the child changes neither the parent nor the shared prefix", async () => {
    const p = await parentWithTurns(2);
    const c = await forkChild(p.host, p.uid, 0n);
    const before = journal(p.host);
    const turn = await drain(c.host.exec(execReq({ inputs: [userText("child only")] })));
    expect(turn.failure).toBeUndefined();
    expect(journal(p.host)).toEqual(before);
    expect(session(c.host).lastSeq).toBe(16n);
    expect(
      journal(c.host)
        .slice(0, 10)
        .map((r) => r.hash),
    ).toEqual(before.map((r) => r.hash));
  });

  it("fork: at_seq past the head is refused; 0 means the head", () => {
    const p = setup();
    return createSession(p.host).then(async () => {
      await drain(p.host.exec(execReq({ inputs: [userText("x")] })));
      expect(await p.host.forkSource(6n)).toMatchObject({ ok: false, reason: "invalid_request" });
      expect(await p.host.forkSource(0n)).toMatchObject({ ok: true, value: { atSeq: 5n } });
    });
  });

  it("fork: a prefix page that does not link is refused; discard leaves no storage", async () => {
    const p = await parentWithTurns(1);
    const child = setup();
    child.host.forkBegin("default", mintSessionUid(), create(SessionSchema, { harness: "echo" }));
    const page = p.host.read(2n, 5n, 10);
    expect(page.ok && child.host.forkSeed(page.value)).toMatchObject({ ok: false, reason: "invalid_log" });
    await child.host.forkDiscard();
    expect(child.db.query("SELECT name FROM sqlite_master WHERE type = 'table'")).toEqual([]);
    expect(child.host.get()).toMatchObject({ ok: false, reason: "session_not_found" });
  });
});
