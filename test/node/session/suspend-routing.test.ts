/**
 * Which backend Suspend snapshots when a turn is parked on an approval (docs/behaviour.md §4.8;
 * checklist §8.17 #192), in process on sql.js. A registered http_runtime harness is placed on its
 * own backend (objects/tunnel/served-harness.ts); the fake below stands in for that backend, and a
 * spy on the built-in runtime shows the default backend is never touched.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema, Lifecycle_Kind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState, RuntimeCapabilitiesSchema, SnapshotRefSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { createBuiltinRuntime } from "../../../runtimes/builtin/runtime.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import type { Runtime } from "../../../runtimes/runtime-spi.js";
import type { PlacingRuntime } from "../../../objects/session/state.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import { fakeExecutor } from "../support/controller-fixture.js";
import { createSession, drain, execReq, setup } from "../support/session-fixture.js";

/** A runtime backend that records what it is asked to do; its snapshot refs are numbered. */
function fakeBackend(): { runtime: PlacingRuntime; calls: string[] } {
  const calls: string[] = [];
  let n = 0;
  const inc = (uid: string) => ({ id: uid, worker: "pod-1", address: "", runtime: "fake-pod", fence: 0n });
  const runtime: PlacingRuntime = {
    name: "fake-pod",
    capabilities: () => create(RuntimeCapabilitiesSchema, {}),
    describe: async () => toolsHarness.describe(),
    dialback: async () => ({ tunnelUrl: "ws://127.0.0.1:1/harness", token: "one-time" }),
    create: async (spec) => (calls.push("create"), inc(spec.sessionUid)),
    restore: async (_ref, spec) => (calls.push("restore"), inc(spec.sessionUid)),
    snapshot: async (i, kind) => (calls.push(`snapshot ${kind}`), create(SnapshotRefSchema, { local: i.id, externalUri: `pod://snapshots/${++n}` })),
    fork: async () => {
      throw new Error("not used");
    },
    stop: async () => void calls.push("stop"),
    status: async () => ComputeState.COMPUTE_LIVE,
  };
  return { runtime, calls };
}

/** The built-in (default) runtime, recording any call at all. */
function spiedBuiltin(): { runtime: Runtime; calls: string[] } {
  const inner = createBuiltinRuntime();
  const calls: string[] = [];
  const runtime: Runtime = {
    ...inner,
    create: (spec) => (calls.push("create"), inner.create(spec)),
    restore: (ref, spec) => (calls.push("restore"), inner.restore(ref, spec)),
    snapshot: (i, kind) => (calls.push(`snapshot ${kind}`), inner.snapshot(i, kind)),
    stop: (i) => (calls.push("stop"), inner.stop(i)),
  };
  return { runtime, calls };
}

function lastSuspend(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  const b = fromBinary(EventSchema, r.value[r.value.length - 1]!.event).body;
  return b.case === "lifecycle" && b.value.kind === Lifecycle_Kind.LIFECYCLE_SUSPEND ? b.value : undefined;
}

describe("Suspend of a parked session (checklist §8.17 #192)", () => {
  it("suspend (checklist §8.17 #192): a pending invocation is snapshotted on its recorded harness's backend; the default runtime is not touched", async () => {
    const backend = fakeBackend();
    const builtin = spiedBuiltin();
    const ex = fakeExecutor();
    const fx = setup({}, undefined, {
      tools: ex.executor,
      runtime: builtin.runtime,
      // As objects/tunnel/served-harness.ts serves a registered http_runtime harness.
      remote: async (name) => (name === "pod-tools" ? { harness: toolsHarness, registered: true, runtime: backend.runtime } : undefined),
    });
    await createSession(fx.host, "pod-tools");
    const config = new TextEncoder().encode(JSON.stringify({ calls: [{ id: "g1", tool: "pay", mediation: "REQUIRES_APPROVAL" }] }));
    const turn = await drain(fx.host.exec(execReq({ inputs: [userText("pay")], config })));
    expect(turn.failure).toBeUndefined();
    // The park itself checkpoints through the harness's backend.
    expect(backend.calls).toEqual(["create", "snapshot EXTERNAL"]);
    expect(lastSuspend(fx.host)).toMatchObject({ snapshotExternalUri: "pod://snapshots/1" });
    const parked = fx.host.get();
    expect(parked.ok && parked.value).toMatchObject({ execState: ExecState.EXEC_AWAITING, pendingApproval: { toolCallId: "g1" } });

    const suspended = await fx.host.suspend();
    expect(suspended).toMatchObject({
      ok: true,
      value: { computeState: ComputeState.COMPUTE_COLD, execState: ExecState.EXEC_AWAITING, pendingApproval: { toolCallId: "g1" } },
    });
    expect(backend.calls).toEqual(["create", "snapshot EXTERNAL", "snapshot EXTERNAL"]);
    expect(lastSuspend(fx.host)).toMatchObject({ snapshotLocal: suspended.ok ? suspended.value.metadata!.uid : "", snapshotExternalUri: "pod://snapshots/2" });
    expect(builtin.calls).toEqual([]);
    expect(ex.calls).toHaveLength(0);
  });
});
