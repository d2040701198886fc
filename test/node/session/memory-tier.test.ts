/**
 * The memory tier in process, on sql.js (objects/session/memory-restore.ts, memory-fork.ts;
 * docs/runtimes.md "The memory tier"): a harness that requires memory snapshots on a backend that
 * takes them (test/node/support/fake-memory-backend.ts). Resume restores the recorded SUSPEND ref
 * on the runtime admission described, and turns on restored memory get an empty history (I4); a
 * fork is refused at a historical seq before anything happens, checkpoints the parent once with
 * CAS on the fork seq, and clones every child from that one snapshot; its failures say what is
 * left. The same path against the real bridge and `wrangler dev`: test/node/integration/memory-tier.test.ts.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, Lifecycle_Kind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../../../proto/ids.js";
import { textOf, userText } from "../../../proto/messages.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import { fakeMemoryBackend, type FakeMemoryBackend } from "../support/fake-memory-backend.js";
import { lifecycleEvent } from "../../../objects/controller/events.js";
import { createSession, drain, execReq, inject, setup, sessionOf as session, stateOf } from "../support/session-fixture.js";

function journal(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => ({ ...x, decoded: fromBinary(EventSchema, x.event) }));
}
const kindsOf = (host: SessionHost) => journal(host).map((r) => EventKind[r.decoded.kind].replace(/^EVENT_/, ""));
const lastLifecycle = (host: SessionHost) => {
  const b = journal(host).at(-1)!.decoded.body;
  return b.case === "lifecycle" ? b.value : undefined;
};

/** A session host whose "mem" harness is registered on the fake memory backend (a fresh client per lookup, as the Worker's). */
function memorySetup(backend: FakeMemoryBackend = fakeMemoryBackend()) {
  const fx = setup({}, undefined, {
    remote: async (name) => (name === "mem" ? { harness: backend.harness, registered: true, runtime: backend.runtime() } : undefined),
  });
  return { fx, backend };
}

async function exec(host: SessionHost, text: string): Promise<string[]> {
  const r = await drain(host.exec(execReq({ inputs: [userText(text)] })));
  if (r.failure) throw new Error(r.failure.message);
  return r.updates.flatMap((u) => {
    const e = u.update.case === "record" ? u.update.value.event : undefined;
    return e?.kind === EventKind.EVENT_OUTPUT && e.body.case === "message" ? [textOf(e.body.value)] : [];
  });
}

/** A memory-tier session with two turns behind it (head 8). */
async function parentWithTwoTurns() {
  const m = memorySetup();
  const uid = await createSession(m.fx.host, "mem");
  expect(await exec(m.fx.host, "a")).toEqual(["1 history=0"]);
  expect(await exec(m.fx.host, "b")).toEqual(["2 history=4"]);
  return { ...m, uid };
}

describe("memory-tier suspend and resume", () => {
  it("resume: restores the recorded memory snapshot on the runtime admission described, appends RESUME, and the next turn gets an empty history (checklist §8.16 #154)", async () => {
    const { fx, backend, uid } = await parentWithTwoTurns();
    const suspended = await fx.host.suspend();
    expect(suspended).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_COLD } });
    expect(lastLifecycle(fx.host)).toMatchObject({
      kind: Lifecycle_Kind.LIFECYCLE_SUSPEND,
      snapshotLocal: uid,
      snapshotExternalUri: "fake://snapshots/1",
      snapshotMemory: true,
    });

    const at = backend.calls.length;
    const resumed = await fx.host.resume();
    expect(resumed).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_LIVE } });
    expect(backend.calls.slice(at)).toEqual(["describe", `dialback self`, `restore ${uid} fake://snapshots/1`]);
    expect(lastLifecycle(fx.host)?.kind).toBe(Lifecycle_Kind.LIFECYCLE_RESUME);

    // Its memory holds the count: nothing of the journal is replayed into it (I4).
    expect(await exec(fx.host, "c")).toEqual(["3 history=0"]);
    expect(kindsOf(fx.host)).toEqual([
      ...["EXECUTION_START", "INPUT", "OUTPUT", "END"],
      ...["EXECUTION_START", "INPUT", "OUTPUT", "END"],
      "LIFECYCLE",
      "LIFECYCLE",
      ...["EXECUTION_START", "INPUT", "OUTPUT", "END"],
    ]);
    expect(await fx.host.audit(false)).toMatchObject({ ok: true, value: { chain: { ok: true, records: 14n } } });
  });

  it("resume: a memory snapshot the backend can no longer restore is FAILED_PRECONDITION naming it; nothing is written and the session stays cold", async () => {
    const { fx, backend } = await parentWithTwoTurns();
    await fx.host.suspend();
    const before = session(fx.host).lastSeq;
    backend.failRestore(new ConnectError("runtime http://bridge Restore: actor agentsessions/x is gone", Code.FailedPrecondition));
    const r = await fx.host.resume();
    expect(r).toMatchObject({ ok: false, reason: "snapshot_unusable" });
    expect(!r.ok && r.message).toContain("memory snapshot fake://snapshots/1");
    expect(!r.ok && r.message).toContain("is gone");
    expect(session(fx.host)).toMatchObject({ lastSeq: before, computeState: ComputeState.COMPUTE_COLD });
  });

  it("resume: a failed turn of a memory-tier harness is re-driven with CanPlace on the runtime admission described, not refused as unplaceable", async () => {
    const { fx, backend } = await parentWithTwoTurns();
    backend.crashNext();
    const failed = await drain(fx.host.exec(execReq({ inputs: [userText("c")] })));
    expect(failed.failure?.reason).toBe("turn_failed");
    const resumed = await fx.host.resume();
    expect(resumed).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_LIVE } });
    expect(kindsOf(fx.host).slice(8)).toEqual(["EXECUTION_START", "INPUT", "ERROR", "OUTPUT", "END", "LIFECYCLE"]);
    expect(backend.counts.value).toBe(3);
  });
});

describe("memory-tier fork, the parent's side", () => {
  it("fork: a memory-tier session forks only at its head: a historical at_seq is refused with nothing but a Describe, no fence minted and nothing written (checklist §8.16 #143)", async () => {
    const { fx, backend } = await parentWithTwoTurns();
    const fence = stateOf(fx.host).journal.fence();
    const at = backend.calls.length;
    const refused = await fx.host.forkSource(4n);
    expect(refused).toMatchObject({ ok: false, reason: "unplaceable" });
    expect(!refused.ok && refused.message).toContain("forks only at its head (seq 8)");
    expect(backend.calls.slice(at)).toEqual(["describe"]);
    expect(stateOf(fx.host).journal.fence()).toBe(fence);
    expect(session(fx.host).lastSeq).toBe(8n);

    expect(await fx.host.forkSource(0n)).toMatchObject({ ok: true, value: { atSeq: 8n, memory: true } });
    expect(await fx.host.forkSource(8n)).toMatchObject({ ok: true, value: { atSeq: 8n, memory: true } });
  });

  it("fork: the parent is checkpointed once, SUSPEND with CAS on the fork seq, and every child is cloned from that one snapshot with its own dialback (checklist §8.16 #142, #145)", async () => {
    const { fx, backend, uid } = await parentWithTwoTurns();
    const kids = [mintSessionUid(), mintSessionUid(), mintSessionUid()];
    const at = backend.calls.length;
    expect(await fx.host.forkClone(8n, kids)).toEqual({ ok: true, value: { checkpointSeq: 9n } });
    expect(backend.calls.slice(at)).toEqual([
      "describe",
      `snapshot EXTERNAL ${uid}`,
      ...kids.map((k) => `dialback ${k}`),
      `forkMany fake://snapshots/1 ${kids.join(",")}`,
    ]);
    expect(backend.forks).toHaveLength(1);
    expect(backend.forks[0]!.ref).toMatchObject({ local: uid, externalUri: "fake://snapshots/1", memory: true });
    expect(lastLifecycle(fx.host)).toMatchObject({ kind: Lifecycle_Kind.LIFECYCLE_SUSPEND, snapshotExternalUri: "fake://snapshots/1", snapshotMemory: true });
    expect(session(fx.host)).toMatchObject({ lastSeq: 9n, computeState: ComputeState.COMPUTE_COLD });
  });

  it("fork: a parent that advanced past the fork seq is ABORTED before any checkpoint; one that is busy is refused likewise", async () => {
    const { fx, backend } = await parentWithTwoTurns();
    const at = backend.calls.length;
    expect(await fx.host.forkClone(7n, [mintSessionUid()])).toMatchObject({ ok: false, reason: "cas_conflict" });
    expect(backend.calls.slice(at)).toEqual(["describe"]);
    const live = stateOf(fx.host).takeGuard();
    expect(await fx.host.forkClone(8n, [mintSessionUid()])).toMatchObject({ ok: false, reason: "session_busy" });
    stateOf(fx.host).release(live);
    expect(session(fx.host).lastSeq).toBe(8n);
  });

  it("fork: a writer that commits to the parent while its checkpoint is taken aborts the fork: ABORTED, no SUSPEND, no clone (checklist §8.16 #147)", async () => {
    const { fx, backend } = await parentWithTwoTurns();
    backend.duringSnapshot(() => inject(fx.host, [lifecycleEvent(Lifecycle_Kind.LIFECYCLE_BASELINE)]));
    const r = await fx.host.forkClone(8n, [mintSessionUid()]);
    expect(r).toMatchObject({ ok: false, reason: "cas_conflict" });
    expect(!r.ok && r.message).toContain("the parent advanced to seq 9 after the fork chose seq 8");
    expect(backend.calls.some((c) => c.startsWith("forkMany"))).toBe(false);
    expect(kindsOf(fx.host).at(-1)).toBe("LIFECYCLE");
    expect(lastLifecycle(fx.host)?.kind).toBe(Lifecycle_Kind.LIFECYCLE_BASELINE);
  });

  it("fork: a clone whose outcome is unknown stops every child; a refused one names the snapshot; either way the parent keeps its checkpoint and its chain verifies", async () => {
    const { fx, backend } = await parentWithTwoTurns();
    const kids = [mintSessionUid(), mintSessionUid()];
    backend.failForkMany(new ConnectError("runtime http://bridge ForkMany: unreachable (retryable)", Code.Unavailable));
    const lost = await fx.host.forkClone(8n, kids);
    expect(lost).toMatchObject({ ok: false, reason: "harness_unavailable" });
    expect(!lost.ok && lost.message).toContain("the parent is left suspended (SUSPEND at seq 9): fork it again at its new head");
    expect(backend.calls.slice(-2).sort()).toEqual(kids.map((k) => `stop ${k}`).sort());

    const more = [mintSessionUid()];
    backend.failForkMany(
      new ConnectError("runtime http://bridge ForkMany: parent actor's snapshot fake://snapshots/2 was superseded", Code.FailedPrecondition),
    );
    const stale = await fx.host.forkClone(9n, more);
    expect(stale).toMatchObject({ ok: false, reason: "snapshot_unusable" });
    expect(!stale.ok && stale.message).toContain("memory snapshot fake://snapshots/2");
    expect(backend.calls).not.toContain(`stop ${more[0]}`);
    expect(kindsOf(fx.host).slice(-2)).toEqual(["LIFECYCLE", "LIFECYCLE"]);
    expect(await fx.host.audit(false)).toMatchObject({ ok: true, value: { chain: { ok: true, records: 10n } } });
  });

  it("fork: a memory fork's child is sealed LIVE (its clone runs) and its turns run on the cloned memory with an empty history", async () => {
    const { fx, backend, uid } = await parentWithTwoTurns();
    const src = await fx.host.forkSource(0n);
    if (!src.ok) throw new Error(src.message);
    const child = memorySetup(backend);
    const childUid = mintSessionUid();
    const statics = create(SessionSchema, { harness: "mem", metadata: { project: "default" }, parentUid: uid, forkSeq: 8n });
    expect(child.fx.host.forkBegin("default", childUid, statics).ok).toBe(true);
    const page = fx.host.read(1n, 8n, 100);
    expect(page.ok && child.fx.host.forkSeed(page.value).ok).toBe(true);
    expect(await fx.host.forkClone(8n, [childUid])).toMatchObject({ ok: true });
    const sealed = child.fx.host.forkFinish(8n, src.value.states, true);
    expect(sealed.ok).toBe(true);
    expect(session(child.fx.host)).toMatchObject({ lastSeq: 9n, computeState: ComputeState.COMPUTE_LIVE });

    const at = backend.calls.length;
    expect(await exec(child.fx.host, "c")).toEqual(["3 history=0"]);
    // Already running: Create attaches (the bridge keeps its connection); nothing is restored.
    expect(backend.calls.slice(at, at + 3)).toEqual(["describe", "dialback self", `create ${childUid}`]);
  });
});

describe("delete on a runtime backend", () => {
  it("delete: stops the session's compute on its backend before erasing; a backend that cannot stop it refuses the Delete and nothing is erased", async () => {
    const { fx, backend, uid } = await parentWithTwoTurns();
    backend.failStop(new ConnectError("runtime http://bridge Stop: unreachable (retryable)", Code.Unavailable));
    const refused = await fx.host.delete(async () => undefined);
    expect(refused).toMatchObject({ ok: false, reason: "harness_unavailable" });
    expect(!refused.ok && refused.message).toContain("nothing was deleted");
    expect(session(fx.host).lastSeq).toBe(8n);

    let tombstoned = false;
    expect(await fx.host.delete(async () => void (tombstoned = true))).toMatchObject({ ok: true });
    expect(tombstoned).toBe(true);
    expect(backend.calls.filter((c) => c.startsWith("stop"))).toEqual([`stop ${uid}`, `stop ${uid}`]);
    expect(fx.host.get()).toMatchObject({ ok: false, reason: "session_not_found" });
  });
});
