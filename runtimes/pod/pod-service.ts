/**
 * The pod's implementation of `agentsessions.edge.v1.Runtime` (runtime.proto): Describe from the
 * modules loaded at startup, capabilities all false, and placement through the IncarnationPool.
 * Incarnations answered here carry fence 0: the host stamps fences, and none reaches Create.
 * @internal Used by pod-server.ts; tested in test/node/pod/.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  IncarnationSchema,
  SnapshotKind,
  type Dialback as WireDialback,
  type Incarnation,
  type Runtime,
} from "../../proto/gen/agentsessions/edge/v1/runtime_pb.js";
import { RuntimeCapabilitiesSchema, SnapshotRefSchema, type SnapshotRef } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { HarnessModules } from "../node/harness-modules.js";
import type { Dialback, IncarnationPool, Placed } from "./incarnations.js";

export const POD_RUNTIME = "pod";

export function createPodService(modules: HarnessModules, pool: IncarnationPool): ServiceImpl<typeof Runtime> {
  const incarnation = (p: Placed): Incarnation => create(IncarnationSchema, { id: p.id, worker: p.worker, address: "", runtime: POD_RUNTIME, fence: 0n });
  // The journal is the durable state: a ref names the session and never claims memory.
  const ref = (uid: string): SnapshotRef => create(SnapshotRefSchema, { local: uid, memory: false });

  return {
    async describe(req, ctx) {
      const m = modules.get(req.harness);
      if (!m)
        throw new ConnectError(`harness ${JSON.stringify(req.harness)} is not hosted here (hosted: ${[...modules.keys()].sort().join(", ")})`, Code.NotFound);
      try {
        return await m.harness.describe(ctx.signal);
      } catch (e) {
        throw new ConnectError(
          `harness ${req.harness}: describe failed: ${e instanceof Error ? e.message : String(e)}`,
          Code.Internal,
          undefined,
          undefined,
          e,
        );
      }
    },

    // A process can be paused but not captured: no memory snapshots, no copy-on-write forks.
    capabilities: () => create(RuntimeCapabilitiesSchema, { memorySnapshot: false, cowFork: false, attest: false, gpuState: false }),

    async create(req) {
      return incarnation(await pool.place(req.spec?.sessionUid ?? "", req.spec?.harness ?? "", dialbackOf(req.dialback)));
    },

    async snapshot(req) {
      const uid = req.incarnation?.id ?? "";
      if (req.kind !== SnapshotKind.LOCAL && req.kind !== SnapshotKind.EXTERNAL) throw new ConnectError("kind must be LOCAL or EXTERNAL", Code.InvalidArgument);
      await pool.snapshot(uid, req.kind === SnapshotKind.LOCAL ? "LOCAL" : "EXTERNAL");
      return ref(uid);
    },

    async restore(req) {
      const uid = req.ref?.local || req.spec?.sessionUid || "";
      if (!uid) throw new ConnectError("a restore needs ref.local (the session uid)", Code.InvalidArgument);
      const specUid = req.spec?.sessionUid ?? "";
      if (specUid && specUid !== uid) throw new ConnectError(`ref.local ${uid} and spec.session_uid ${specUid} name different sessions`, Code.InvalidArgument);
      return incarnation(await pool.place(uid, req.spec?.harness ?? "", dialbackOf(req.dialback)));
    },

    // copy_on_write is accepted and ignored: every fork is a fresh process whose state comes back
    // by replay (the harness must be fork-safe; the host checks that, not the runtime).
    async fork(req) {
      if (!req.childSessionUid) throw new ConnectError("child_session_uid is required", Code.InvalidArgument);
      const harness = req.spec?.harness || pool.harnessOf(req.ref?.local ?? "") || "";
      return incarnation(await pool.place(req.childSessionUid, harness, dialbackOf(req.dialback)));
    },

    // A memory fan-out clones RAM; a pod has none to clone (capabilities say memory_snapshot=false),
    // so it refuses rather than hand out fresh processes that would silently forget the parent.
    forkMany() {
      throw new ConnectError(
        "the pod runtime takes no memory snapshots (memory_snapshot=false), so it cannot clone children from one: fork by replay, one Fork per child",
        Code.FailedPrecondition,
      );
    },

    async stop(req) {
      await pool.stop(req.incarnation?.id ?? "");
      return {};
    },

    status: (req) => {
      const uid = req.incarnation?.id ?? "";
      if (!uid) throw new ConnectError("incarnation.id is required", Code.InvalidArgument);
      return { state: pool.status(uid) };
    },
  };
}

function dialbackOf(d: WireDialback | undefined): Dialback | undefined {
  return d && { tunnelUrl: d.tunnelUrl, token: d.token };
}
