/**
 * The placement gate on Resume and the live re-check, in process on sql.js (docs/behaviour.md §6.1;
 * checklist §8.16 #149, #151). A harness that now requires memory snapshots is refused before any
 * compute is restored and without a write; and for a runtime backend, whose Describe speaks for a
 * harness it has not started, the harness on the session's own connection is gated too.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability, type HarnessDescriptor } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, ExecState, type SnapshotRef } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import { createBuiltinRuntime } from "../../../runtimes/builtin/runtime.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import type { Runtime } from "../../../runtimes/runtime-spi.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import { fakeBackend } from "../support/fake-backend.js";
import { createSession, descriptor, drain, execReq, setup, sessionOf as session } from "../support/session-fixture.js";

const kindsOf = (host: SessionHost) => {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value.map((x) => EventKind[fromBinary(EventSchema, x.event).kind].replace(/^EVENT_/, ""));
};

/** What the test `tools` harness describes (synchronously). */
const TOOLS = toolsHarness.describe() as HarnessDescriptor;

/** The built-in runtime, recording every call that touches compute. */
function spyRuntime() {
  const inner = createBuiltinRuntime();
  const calls: string[] = [];
  const runtime: Runtime = {
    ...inner,
    create: (spec) => (calls.push("create"), inner.create(spec)),
    restore: (ref: SnapshotRef, spec) => (calls.push("restore"), inner.restore(ref, spec)),
    snapshot: (inc, kind) => (calls.push(`snapshot ${kind}`), inner.snapshot(inc, kind)),
    stop: (inc) => (calls.push("stop"), inner.stop(inc)),
  };
  return { runtime, calls };
}

describe("Resume into a harness that now needs memory snapshots (checklist §8.16 #149)", () => {
  it("resume (checklist §8.16 #149): an interrupted turn whose harness now needs memory snapshots is refused before any restore, writing nothing; once it is placeable again the same session resumes and re-drives", async () => {
    // Stateless at first; the turn fails (an ERROR, not an END), so Resume has a turn to re-drive.
    const mode = { memory: false, crash: true, runs: 0 };
    const shifty: Harness = {
      describe: () => descriptor("shifty", mode.memory ? Resumability.REQUIRES_MEMORY_SNAPSHOT : Resumability.STATELESS_REPLAY),
      async run(start, sink) {
        mode.runs++;
        if (mode.crash) throw new Error("the harness crashed");
        await echoHarness.run(start, sink);
      },
    };
    const spy = spyRuntime();
    const fx = setup({ shifty }, undefined, { runtime: spy.runtime });
    await createSession(fx.host, "shifty");
    const failed = await drain(fx.host.exec(execReq({ inputs: [userText("again")] })));
    expect(failed.failure?.reason).toBe("turn_failed");
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "ERROR"]);
    const before = session(fx.host);

    mode.memory = true;
    mode.crash = false;
    const refused = await fx.host.resume();
    expect(refused).toMatchObject({ ok: false, reason: "unplaceable" });
    expect(!refused.ok && refused.message).toContain("memory snapshots");
    // Before Restore: the runtime was not asked for anything; and nothing was written or run.
    expect(spy.calls).toEqual([]);
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "ERROR"]);
    expect(session(fx.host)).toMatchObject({ lastSeq: before.lastSeq, computeState: before.computeState, execState: before.execState });
    expect(mode.runs).toBe(1);
    expect(fx.logs).toContainEqual(expect.objectContaining({ msg: "placement", decision: "refused", harness: "shifty" }));

    mode.memory = false;
    const resumed = await fx.host.resume();
    expect(resumed).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_LIVE, execState: ExecState.EXEC_COMPLETED } });
    expect(spy.calls).toEqual(["create"]);
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "ERROR", "MODEL_CALL", "OUTPUT", "END", "LIFECYCLE"]);
    expect(mode.runs).toBe(2);
  });

  it("resume (checklist §8.16 #149): a suspended session whose backend now describes a memory harness is refused before Restore, writing nothing; once the backend describes a stateless one again it resumes", async () => {
    const backend = fakeBackend(TOOLS);
    const spy = spyRuntime();
    const fx = setup({}, undefined, {
      runtime: spy.runtime,
      remote: async (name) => (name === "pod-tools" ? { harness: toolsHarness, registered: true, runtime: backend.runtime } : undefined),
    });
    await createSession(fx.host, "pod-tools");
    expect((await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })))).failure).toBeUndefined();
    expect(await fx.host.suspend()).toMatchObject({ ok: true, value: { computeState: ComputeState.COMPUTE_COLD } });
    const suspended = session(fx.host);
    const calls = backend.calls.length;

    backend.describes.descriptor = descriptor("tools", Resumability.REQUIRES_MEMORY_SNAPSHOT);
    const refused = await fx.host.resume();
    expect(refused).toMatchObject({ ok: false, reason: "unplaceable" });
    expect(backend.calls.slice(calls)).toEqual(["describe"]);
    expect(session(fx.host)).toMatchObject({ lastSeq: suspended.lastSeq, computeState: ComputeState.COMPUTE_COLD });

    backend.describes.descriptor = TOOLS;
    const resumed = await fx.host.resume();
    expect(resumed).toMatchObject({ ok: true, value: { lastSeq: suspended.lastSeq + 1n, computeState: ComputeState.COMPUTE_LIVE } });
    expect(backend.calls.slice(calls)).toEqual(["describe", "describe", "restore"]);
    expect(kindsOf(fx.host).at(-1)).toBe("LIFECYCLE");
    expect(spy.calls).toEqual([]);
  });
});

describe("the live re-check of a runtime-backed harness (checklist §8.16 #151)", () => {
  /** A registered http_runtime harness whose backend describes `tools`, while the placed one describes `live`. */
  function liveSetup(expectId?: string) {
    const backend = fakeBackend(TOOLS);
    const live = { descriptor: descriptor("tools", Resumability.REQUIRES_MEMORY_SNAPSHOT), runs: 0 };
    const placed: Harness = { describe: () => live.descriptor, run: (start, sink) => (live.runs++, toolsHarness.run(start, sink)) };
    const fx = setup({}, undefined, {
      remote: async (name) => (name === "pod-tools" ? { harness: placed, registered: true, runtime: backend.runtime, expectId } : undefined),
    });
    return { fx, backend, live };
  }

  it("exec, resume (checklist §8.16 #151): a memory harness behind a stateless backend descriptor is refused FAILED_PRECONDITION without writes", async () => {
    const { fx, backend, live } = liveSetup();
    await createSession(fx.host, "pod-tools");

    const turn = await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })));
    expect(turn.failure).toMatchObject({ reason: "unplaceable" });
    expect(turn.failure!.message).toContain("memory snapshots");
    expect(turn.updates.filter((u) => u.update.case === "record")).toHaveLength(0);
    expect(live.runs).toBe(0);
    expect(session(fx.host).lastSeq).toBe(0n);
    // Admission said yes (the backend's descriptor), so the incarnation was placed; the re-check refused it.
    expect(backend.calls.slice(0, 2)).toEqual(["describe", "create"]);
    expect(fx.logs).toContainEqual(expect.objectContaining({ msg: "placement", op: "recheck", decision: "refused", harness: "pod-tools" }));

    const resumed = await fx.host.resume();
    expect(resumed).toMatchObject({ ok: false, reason: "unplaceable" });
    expect(session(fx.host).lastSeq).toBe(0n);
    expect(live.runs).toBe(0);

    // The same session runs once the placed harness describes itself as its backend does.
    live.descriptor = TOOLS;
    expect((await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })))).failure).toBeUndefined();
    expect(live.runs).toBe(1);
    expect(kindsOf(fx.host)).toEqual(["EXECUTION_START", "INPUT", "OUTPUT", "END"]);
  });

  it("exec, resume (checklist §8.16 #151): the placed harness must describe the registration's descriptor id; another one is refused without writes", async () => {
    const { fx, live } = liveSetup("tools");
    live.descriptor = descriptor("impostor");
    await createSession(fx.host, "pod-tools");

    const turn = await drain(fx.host.exec(execReq({ inputs: [userText("hi")] })));
    expect(turn.failure).toMatchObject({ reason: "harness_mismatch" });
    expect(turn.failure!.message).toContain('"impostor"');
    expect(await fx.host.resume()).toMatchObject({ ok: false, reason: "harness_mismatch" });
    expect(session(fx.host).lastSeq).toBe(0n);
    expect(live.runs).toBe(0);
  });
});
