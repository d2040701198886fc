/**
 * Operational faults keep their cause, in process on sql.js (docs/behaviour.md §4.11, §4.12; checklist
 * checklist §8.17 #184, #190, checklist §8.14 #102): a runtime backend's ABORTED is never the session's own ABORTED, a
 * park whose checkpoint fails stays pending and a Suspend retries it, and a storage fault during
 * Approve is that fault, never an invalid decision, and writes nothing. At the edge (worker/errors.ts)
 * `harness_unavailable` is UNAVAILABLE, `internal` INTERNAL and `session_busy` ABORTED; a storage
 * fault is thrown as itself, across the Durable Object RPC to the Worker.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessDescriptorSchema, type HarnessDescriptor } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, ExecState, RuntimeCapabilitiesSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { createBuiltinRuntime } from "../../../runtimes/builtin/runtime.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import { createHttpRuntime } from "../../../runtimes/http/index.js";
import type { Runtime } from "../../../runtimes/runtime-spi.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import type { PlacingRuntime } from "../../../objects/session/state.js";
import { fakeExecutor } from "../support/controller-fixture.js";
import { fakeBackend } from "../support/fake-backend.js";
import { createSession, drain, execReq, setup, sessionOf as session, stateOf } from "../support/session-fixture.js";

const kindsOf = (host: SessionHost) => {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => EventKind[fromBinary(EventSchema, x.event).kind].replace(/^EVENT_/, ""));
};

/** What the test `tools` harness describes (synchronously). */
const TOOLS = toolsHarness.describe() as HarnessDescriptor;

const gatedConfig = new TextEncoder().encode(JSON.stringify({ calls: [{ id: "g1", tool: "pay", mediation: "REQUIRES_APPROVAL" }] }));

describe("a runtime backend's ABORTED (checklist §8.17 #184)", () => {
  /**
   * The real HTTP runtime client (runtimes/http) against a backend that describes `tools` and
   * answers every other RPC with a Connect `aborted`, as a backend does when another operation on
   * the same session won.
   */
  function abortingBackend() {
    const rpcs: string[] = [];
    const fetch: typeof globalThis.fetch = async (input) => {
      const rpc = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).pathname.split("/").pop()!;
      rpcs.push(rpc);
      const proto = (bytes: Uint8Array) => new Response(bytes.slice(), { status: 200, headers: { "content-type": "application/proto" } });
      if (rpc === "Describe") return proto(toBinary(HarnessDescriptorSchema, TOOLS));
      if (rpc === "Capabilities") return proto(toBinary(RuntimeCapabilitiesSchema, create(RuntimeCapabilitiesSchema, {})));
      return new Response(JSON.stringify({ code: "aborted", message: "another operation on this session won" }), {
        status: 409,
        headers: { "content-type": "application/json" },
      });
    };
    const runtime: PlacingRuntime = Object.assign(createHttpRuntime({ baseUrl: "http://backend.test", fetch, name: "fake-http" }), {
      dialback: async () => ({ tunnelUrl: "ws://127.0.0.1:1/harness", token: "one-time" }),
    });
    return { runtime, rpcs };
  }

  it("exec, resume, suspend (checklist §8.17 #184): a backend answering ABORTED is never the session's ABORTED; last_seq stays 0", async () => {
    const backend = abortingBackend();
    const fx = setup({}, undefined, {
      remote: async (name) => (name === "pod-tools" ? { harness: toolsHarness, registered: true, runtime: backend.runtime } : undefined),
    });
    await createSession(fx.host, "pod-tools");

    const turn = await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })));
    const resumed = await fx.host.resume();
    const suspended = await fx.host.suspend();
    // Placement (Exec, Resume): the client classifies a backend's ABORTED as retryable
    // (docs/runtimes.md "How the host calls a backend"), so harness_unavailable (UNAVAILABLE), not
    // INTERNAL as in the reference; Suspend's failed snapshot is internal (INTERNAL). Never
    // cas_conflict, fenced or session_busy (ABORTED), which tell a caller to re-read the session
    // and retry at a new cursor.
    expect(turn.failure).toMatchObject({ reason: "harness_unavailable" });
    expect(resumed).toMatchObject({ ok: false, reason: "harness_unavailable" });
    expect(suspended).toMatchObject({ ok: false, reason: "internal" });
    for (const f of [turn.failure!, resumed, suspended]) expect(!f.ok && f.message).toContain("another operation on this session won");
    expect(backend.rpcs).toEqual(expect.arrayContaining(["Create", "Snapshot"]));
    expect(turn.updates.filter((u) => u.update.case === "record")).toHaveLength(0);
    expect(session(fx.host)).toMatchObject({ lastSeq: 0n, execState: ExecState.EXEC_PENDING });
    expect(kindsOf(fx.host)).toEqual([]);
  });
});

describe("a park whose checkpoint fails (checklist §8.17 #190)", () => {
  it("park (checklist §8.17 #190): a failed post-park snapshot is INTERNAL with no final session frame; the request stays pending and compute not COLD; a retried Suspend succeeds", async () => {
    const backend = fakeBackend(TOOLS);
    backend.failExternalSnapshots(1, new Error("snapshot store unreachable"));
    const ex = fakeExecutor();
    const fx = setup({}, undefined, {
      tools: ex.executor,
      remote: async (name) => (name === "pod-tools" ? { harness: toolsHarness, registered: true, runtime: backend.runtime } : undefined),
    });
    await createSession(fx.host, "pod-tools");

    const turn = await drain(fx.host.exec(execReq({ inputs: [userText("pay")], config: gatedConfig })));
    expect(turn.failure).toMatchObject({ reason: "internal" });
    expect(turn.failure!.message).toContain("Suspend to retry");
    // Only the first frame is a session frame: a park that ends OK sends a final one.
    expect(turn.updates.map((u) => u.update.case)).toEqual(["session", "record", "record", "record", "record"]);
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST"]);
    const parked = session(fx.host);
    expect(parked.computeState).not.toBe(ComputeState.COMPUTE_COLD);
    expect(parked).toMatchObject({ execState: ExecState.EXEC_AWAITING, lastSeq: 4n, pendingApproval: { toolCallId: "g1", requestSeq: 4n } });

    const suspended = await fx.host.suspend();
    expect(suspended).toMatchObject({
      ok: true,
      value: { computeState: ComputeState.COMPUTE_COLD, execState: ExecState.EXEC_AWAITING, lastSeq: 5n, pendingApproval: parked.pendingApproval },
    });
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE"]);
    expect(backend.calls.filter((c) => c === "snapshot EXTERNAL")).toHaveLength(2);
    expect(ex.calls).toHaveLength(0);
  });
});

describe("operational faults during Approve (checklist §8.14 #102)", () => {
  /** The built-in runtime, whose EXTERNAL snapshots wait while `hold` is set (a Suspend in flight). */
  function holdingRuntime() {
    const inner = createBuiltinRuntime();
    let release: (() => void) | undefined;
    const held = { on: false, reached: undefined as Promise<void> | undefined };
    let reachedOk!: () => void;
    const runtime: Runtime = {
      ...inner,
      snapshot: async (inc, kind) => {
        if (held.on) {
          reachedOk();
          await new Promise<void>((ok) => (release = ok));
        }
        return inner.snapshot(inc, kind);
      },
    };
    const hold = () => {
      held.on = true;
      held.reached = new Promise<void>((ok) => (reachedOk = ok));
    };
    return { runtime, hold, held, release: () => ((held.on = false), release?.()) };
  }

  async function parkedSession(o: Parameters<typeof setup>[2] = {}) {
    const ex = fakeExecutor();
    const fx = setup({ tools: toolsHarness }, undefined, { tools: ex.executor, ...o });
    await createSession(fx.host, "tools");
    const turn = await drain(fx.host.exec(execReq({ inputs: [userText("pay")], config: gatedConfig })));
    expect(turn.failure).toBeUndefined();
    const p = session(fx.host).pendingApproval!;
    expect(p).toMatchObject({ toolCallId: "g1" });
    const decision = { executionId: p.executionId, toolCallId: p.toolCallId, requestSeq: p.requestSeq, approved: true, reason: "ok" };
    return { fx, decision };
  }

  it("approve (checklist §8.14 #102): while another operation holds the session the decision is busy (ABORTED), writes nothing, and succeeds once it is done", async () => {
    const rt = holdingRuntime();
    const { fx, decision } = await parkedSession({ runtime: rt.runtime });
    const head = session(fx.host).lastSeq;
    rt.hold();
    const suspending = fx.host.suspend();
    await rt.held.reached;

    const busy = fx.host.approve(decision);
    expect(busy).toMatchObject({ ok: false, reason: "session_busy" });
    expect(session(fx.host).lastSeq).toBe(head);

    rt.release();
    expect((await suspending).ok).toBe(true);
    const approved = fx.host.approve(decision);
    expect(approved).toMatchObject({ ok: true, value: { decision: { seq: head + 2n } } });
    expect(kindsOf(fx.host).slice(-2)).toEqual(["LIFECYCLE", "APPROVAL_RESULT"]);
  });

  it("approve (checklist §8.14 #102): a storage fault while reading or appending surfaces as that fault, never an invalid decision, and writes no decision; the exact decision then commits", async () => {
    const { fx, decision } = await parkedSession();
    const head = session(fx.host).lastSeq;
    const query = fx.db.query.bind(fx.db);
    const queryRows = fx.db.queryRows.bind(fx.db);
    const faults = { on: undefined as RegExp | undefined, hit: 0 };
    const storageFault = new Error("SQLITE_IOERR: disk I/O error");
    const failing = (sql: string) => {
      if (faults.on?.test(sql)) {
        faults.hit++;
        throw storageFault;
      }
    };
    fx.db.query = ((sql: string, ...params: never[]) => {
      failing(sql);
      return query(sql, ...params);
    }) as typeof fx.db.query;
    fx.db.queryRows = (sql, ...params) => {
      failing(sql);
      return queryRows(sql, ...params);
    };

    // Reading the journal (the gate's evidence) fails: the object starts again, so it reads it.
    stateOf(fx.host).cache.reset();
    faults.on = /^SELECT .* FROM events WHERE seq >= /;
    expect(() => fx.host.approve(decision)).toThrow(storageFault);
    // Appending the decision fails inside its transaction.
    faults.on = /^INSERT INTO events/;
    expect(() => fx.host.approve(decision)).toThrow(storageFault);
    faults.on = undefined;
    expect(faults.hit).toBe(2);

    expect(kindsOf(fx.host)).not.toContain("APPROVAL_RESULT");
    expect(session(fx.host)).toMatchObject({ lastSeq: head, execState: ExecState.EXEC_AWAITING, pendingApproval: { toolCallId: "g1" } });
    const approved = fx.host.approve(decision);
    expect(approved).toMatchObject({ ok: true, value: { decision: { seq: head + 1n }, session: { lastSeq: head + 1n } } });
    expect(approved.ok && approved.value.session.pendingApproval).toBeUndefined();
  });
});
