/**
 * The built-in runtime: harnesses run inside the session's own Durable Object isolate, so there
 * is no compute to provision, pause or copy. The journal is the durable state: a suspend is an
 * EXTERNAL snapshot naming the session (the ref rides the SUSPEND record), restore and fork are
 * fresh placements whose state comes back by replay, and there are no memory snapshots (CanPlace
 * refuses REQUIRES_MEMORY_SNAPSHOT harnesses).
 */
import { create } from "@bufbuild/protobuf";
import { ComputeState, RuntimeCapabilitiesSchema, SnapshotRefSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { RuntimeUnsupportedError, type Incarnation, type Runtime, type SessionSpec } from "../runtime-spi.js";

export const BUILTIN_RUNTIME = "builtin";

export function createBuiltinRuntime(): Runtime {
  const place = (spec: SessionSpec): Incarnation => {
    if (!spec.sessionUid) throw new Error("a placement needs a session uid");
    return { id: spec.sessionUid, worker: "isolate", address: "", runtime: BUILTIN_RUNTIME, fence: 0n };
  };
  return {
    name: BUILTIN_RUNTIME,
    capabilities: () => create(RuntimeCapabilitiesSchema, {}),
    create: async (spec) => place(spec),
    async snapshot(inc, kind) {
      if (kind === "LOCAL") throw new RuntimeUnsupportedError("the built-in runtime keeps no warm state: the journal is the durable state, use EXTERNAL");
      return create(SnapshotRefSchema, { local: inc.id, memory: false });
    },
    async restore(ref, spec) {
      if (!ref.local) throw new Error("a snapshot ref without a local handle cannot be restored");
      return place(spec);
    },
    fork: async (_ref, opts, spec) => place({ ...spec, sessionUid: opts.childSessionUid }),
    stop: async () => undefined,
    status: async () => ComputeState.COMPUTE_LIVE,
  };
}
