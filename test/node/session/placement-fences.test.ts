/**
 * Event-log and placement items of checklist §8.15–8.17 in process, on sql.js: the compute
 * projection of every marker (checklist §8.15 #134), the session schema's version stamp (#135), the fence a
 * placed turn stamps and the newer one each placement mints (checklist §8.16 #136, #139), the gate accepting a
 * memory harness on a runtime that takes memory snapshots (#140), and Fork's CanPlace (checklist §8.17 #171).
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability, type HarnessDescriptor } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, ExecState, RuntimeCapabilitiesSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import type { Incarnation } from "../../../runtimes/runtime-spi.js";
import { Journal } from "../../../objects/journal/journal.js";
import { lifecycleEvent, Lifecycle_Kind } from "../../../objects/controller/events.js";
import { INITIAL_STATES } from "../../../objects/session/meta-store.js";
import { projectRecords, type States } from "../../../objects/session/projection.js";
import { migrateSession } from "../../../objects/session/schema.js";
import { SessionHost } from "../../../objects/session/facade.js";
import type { PlacingRuntime } from "../../../objects/session/state.js";
import { schemaVersion } from "../../../objects/storage/migrate.js";
import { fakeBackend } from "../support/fake-backend.js";
import { createSession, descriptor, drain, execReq, setup, sessionOf as session } from "../support/session-fixture.js";

const TOOLS = toolsHarness.describe() as HarnessDescriptor;

function records(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value;
}
const kindsOf = (host: SessionHost) => records(host).map((x) => EventKind[fromBinary(EventSchema, x.event).kind].replace(/^EVENT_/, ""));

describe("compute projection and the session schema (checklist §8.15)", () => {
  const input = create(EventSchema, { kind: EventKind.EVENT_INPUT, executionId: "e1" });
  const marker = (k: Lifecycle_Kind) => lifecycleEvent(k);
  const after = (from: States, ...events: Event[]) =>
    projectRecords(
      from,
      events.map((event, i) => ({ seq: BigInt(i + 1), event })),
    ).computeState;

  it("projection (checklist §8.15 #134): SUSPEND → COLD, RESUME → LIVE, ordinary records → LIVE, FORK settles COLD, BASELINE leaves it unchanged", () => {
    expect(after(INITIAL_STATES, input)).toBe(ComputeState.COMPUTE_LIVE);
    expect(after(INITIAL_STATES, input, marker(Lifecycle_Kind.LIFECYCLE_SUSPEND))).toBe(ComputeState.COMPUTE_COLD);
    expect(after(INITIAL_STATES, input, marker(Lifecycle_Kind.LIFECYCLE_SUSPEND), marker(Lifecycle_Kind.LIFECYCLE_RESUME))).toBe(ComputeState.COMPUTE_LIVE);
    expect(after(INITIAL_STATES, input, marker(Lifecycle_Kind.LIFECYCLE_FORK))).toBe(ComputeState.COMPUTE_COLD);
    // BASELINE changes nothing, whatever the state before it.
    expect(after(INITIAL_STATES, marker(Lifecycle_Kind.LIFECYCLE_BASELINE))).toBe(ComputeState.COMPUTE_NONE);
    expect(after(INITIAL_STATES, input, marker(Lifecycle_Kind.LIFECYCLE_BASELINE))).toBe(ComputeState.COMPUTE_LIVE);
    expect(after(INITIAL_STATES, input, marker(Lifecycle_Kind.LIFECYCLE_SUSPEND), marker(Lifecycle_Kind.LIFECYCLE_BASELINE))).toBe(ComputeState.COMPUTE_COLD);
  });

  it("schema (checklist §8.15 #135): the session schema is stamped on create, unchanged on reopen, and a database stamped newer is refused", async () => {
    const fx = setup();
    expect(schemaVersion(fx.db)).toBe(0);
    await createSession(fx.host);
    const stamped = schemaVersion(fx.db);
    expect(stamped).toBeGreaterThan(0);
    // Reopen: the object's next incarnation migrates again (a no-op) and reads the same session.
    migrateSession(fx.db);
    expect(schemaVersion(fx.db)).toBe(stamped);
    const reopened = new SessionHost({
      db: fx.db,
      now: () => 0,
      models: () => undefined as never,
      directory: async () => undefined,
      erase: async () => undefined,
    });
    expect(session(reopened).metadata?.uid).toBe(session(fx.host).metadata?.uid);

    fx.db.query("UPDATE schema_version SET version = ?", stamped + 1);
    expect(() => migrateSession(fx.db)).toThrow(/session storage has schema \d+, newer than this build's \d+/);
    expect(schemaVersion(fx.db)).toBe(stamped + 1);
  });
});

/** A registered runtime-backed `tools` harness on the fake backend, recording what the session stamps. */
function placedSetup(o: { memoryRuntime?: boolean; descriptor?: HarnessDescriptor } = {}) {
  const backend = fakeBackend(o.descriptor ?? TOOLS);
  const stamped: Incarnation[] = [];
  const runtime: PlacingRuntime = {
    ...backend.runtime,
    capabilities: () => create(RuntimeCapabilitiesSchema, { memorySnapshot: o.memoryRuntime ?? false }),
    snapshot: (inc, kind) => (stamped.push(inc), backend.runtime.snapshot(inc, kind)),
  };
  const placed: Harness = { describe: () => o.descriptor ?? TOOLS, run: (start, sink) => toolsHarness.run(start, sink) };
  const fx = setup({}, undefined, {
    remote: async (name) => (name === "pod-tools" ? { harness: placed, registered: true, runtime } : undefined),
  });
  return { fx, backend, stamped };
}

describe("fences per placement (checklist §8.16)", () => {
  it("placement (checklist §8.16 #136, #139): each placed turn runs on the backend under a newly minted, non-zero fence stamped on its records and its incarnation; a writer holding the first fence is fenced out; the chain verifies", async () => {
    const { fx, backend, stamped } = placedSetup();
    await createSession(fx.host, "pod-tools");

    expect((await drain(fx.host.exec(execReq({ inputs: [userText("one")] })))).failure).toBeUndefined();
    const first = records(fx.host);
    const f1 = first[0]!.fence;
    expect(f1).toBeGreaterThan(0n);
    expect(first.map((r) => r.fence)).toEqual(first.map(() => f1));
    // Placed through the backend (Create), then paused warm with the turn's fence on the incarnation.
    expect(backend.calls).toEqual(["describe", "create", "snapshot LOCAL"]);
    expect(stamped.map((i) => i.fence)).toEqual([f1]);

    expect((await drain(fx.host.exec(execReq({ inputs: [userText("two")] })))).failure).toBeUndefined();
    const second = records(fx.host).slice(first.length);
    const f2 = second[0]!.fence;
    expect(f2).toBeGreaterThan(f1);
    expect(second.map((r) => r.fence)).toEqual(second.map(() => f2));
    expect(backend.calls.slice(3)).toEqual(["describe", "restore", "snapshot LOCAL"]);
    expect(stamped.map((i) => i.fence)).toEqual([f1, f2]);

    // A controller still bound to the first placement's fence cannot append any more.
    const stale = new Journal(fx.db).append([lifecycleEvent(Lifecycle_Kind.LIFECYCLE_RESUME)], { fence: f1 });
    expect(stale).toMatchObject({ ok: false, reason: "fenced", current: f2, fence: f1 });
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "OUTPUT", "END", "EXECUTION_START", "INPUT", "OUTPUT", "END"]);
    expect(await fx.host.audit(false)).toMatchObject({ ok: true, value: { chain: { ok: true, records: 8n } } });
  });

  it("gate (checklist §8.16 #140): a memory-snapshot harness is accepted on a runtime that takes memory snapshots, and refused without writes on one that does not", async () => {
    const memory = descriptor("tools", Resumability.REQUIRES_MEMORY_SNAPSHOT);
    const refusedOn = placedSetup({ descriptor: memory, memoryRuntime: false });
    await createSession(refusedOn.fx.host, "pod-tools");
    const refused = await drain(refusedOn.fx.host.exec(execReq({ inputs: [userText("hi")] })));
    expect(refused.failure).toMatchObject({ reason: "unplaceable" });
    expect(refusedOn.backend.calls).toEqual(["describe"]);
    expect(session(refusedOn.fx.host).lastSeq).toBe(0n);

    const acceptedOn = placedSetup({ descriptor: memory, memoryRuntime: true });
    await createSession(acceptedOn.fx.host, "pod-tools");
    const accepted = await drain(acceptedOn.fx.host.exec(execReq({ inputs: [userText("hi")] })));
    expect(accepted.failure).toBeUndefined();
    expect(acceptedOn.backend.calls.slice(0, 2)).toEqual(["describe", "create"]);
    expect(kindsOf(acceptedOn.fx.host)).toEqual(["EXECUTION_START", "INPUT", "OUTPUT", "END"]);
    expect(acceptedOn.fx.logs).toContainEqual(
      expect.objectContaining({ msg: "placement", op: "admit", decision: "admitted", harness: "pod-tools", runtime: "fake-pod" }),
    );
  });
});

describe("Fork's CanPlace (checklist §8.17 #171)", () => {
  it("fork (checklist §8.17 #171): a session whose harness requires memory snapshots cannot be forked here, at the head or a historical seq, and nothing is written; a stateless one can", async () => {
    const mode = { memory: false };
    const shifty: Harness = {
      describe: () => descriptor("shifty", mode.memory ? Resumability.REQUIRES_MEMORY_SNAPSHOT : Resumability.STATELESS_REPLAY),
      run: (start, sink) => echoHarness.run(start, sink),
    };
    const fx = setup({ shifty });
    await createSession(fx.host, "shifty");
    expect((await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })))).failure).toBeUndefined();
    const before = session(fx.host);
    expect(await fx.host.forkSource(0n)).toMatchObject({ ok: true, value: { atSeq: 5n } });

    mode.memory = true;
    for (const at of [0n, 2n]) {
      const refused = await fx.host.forkSource(at);
      expect(refused).toMatchObject({ ok: false, reason: "unplaceable" });
      expect(!refused.ok && refused.message).toContain("memory snapshots");
    }
    expect(fx.logs).toContainEqual(expect.objectContaining({ msg: "placement", op: "fork", decision: "refused", harness: "shifty", level: "info" }));
    expect(session(fx.host)).toMatchObject({ lastSeq: before.lastSeq, computeState: before.computeState, execState: ExecState.EXEC_COMPLETED });
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
  });
});
