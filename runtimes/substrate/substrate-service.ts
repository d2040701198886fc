/**
 * The bridge's implementation of `agentsessions.edge.v1.Runtime` (runtime.proto): request checks
 * and wire shapes around SubstrateActors (actors.ts). Describe answers for the one harness the
 * template runs; capabilities say memory snapshots (and no copy-on-write: every clone is a full
 * copy and restore). Incarnations carry fence 0 (the host stamps fences) and runtime "substrate".
 * @internal Used by substrate-server.ts; tested in test/node/substrate/.
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
import type { HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { RuntimeCapabilitiesSchema, SnapshotRefSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { Placed, SubstrateActors } from "./actors.js";
import type { Dialback } from "./attach.js";

export const SUBSTRATE_RUNTIME = "substrate";

/** The contract's fan-out bound (a Fork's count). */
const MAX_CHILDREN = 128;
/** Actor names are DNS-1123 labels, and `fork-<uid>` must be one too. */
const ACTOR_NAME_RE = /^[a-z0-9]([-a-z0-9]{0,56}[a-z0-9])?$/;

export interface HostedHarness {
  /** The registry name sessions select. */
  name: string;
  describe(signal?: AbortSignal): Promise<HarnessDescriptor> | HarnessDescriptor;
}

export function createSubstrateService(harness: HostedHarness, actors: SubstrateActors): ServiceImpl<typeof Runtime> {
  const incarnation = (p: Placed): Incarnation => create(IncarnationSchema, { id: p.id, worker: p.worker, address: "", runtime: SUBSTRATE_RUNTIME, fence: 0n });
  const checkHarness = (name: string | undefined) => {
    if (name && name !== harness.name) throw notHosted(name, harness.name);
  };

  return {
    async describe(req, ctx) {
      if (req.harness !== harness.name) throw notHosted(req.harness, harness.name);
      try {
        return await harness.describe(ctx.signal);
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

    capabilities: () => create(RuntimeCapabilitiesSchema, { memorySnapshot: true, cowFork: false, attest: false, gpuState: false }),

    async create(req) {
      const uid = actorName(req.spec?.sessionUid, "spec.session_uid");
      checkHarness(req.spec?.harness);
      return incarnation(await actors.create(uid, dialbackOf(req.dialback)));
    },

    async snapshot(req) {
      const uid = actorName(req.incarnation?.id, "incarnation.id");
      if (req.kind !== SnapshotKind.LOCAL && req.kind !== SnapshotKind.EXTERNAL) throw new ConnectError("kind must be LOCAL or EXTERNAL", Code.InvalidArgument);
      const s = await actors.snapshot(uid, req.kind === SnapshotKind.LOCAL ? "LOCAL" : "EXTERNAL");
      return create(SnapshotRefSchema, { local: s.local, externalUri: s.externalUri, memory: s.memory, sealed: false });
    },

    async restore(req) {
      const uid = actorName(req.ref?.local || req.spec?.sessionUid, "ref.local");
      const specUid = req.spec?.sessionUid ?? "";
      if (specUid && specUid !== uid) throw new ConnectError(`ref.local ${uid} and spec.session_uid ${specUid} name different sessions`, Code.InvalidArgument);
      checkHarness(req.spec?.harness);
      return incarnation(await actors.restore(uid, dialbackOf(req.dialback), req.ref?.memory ?? false, req.ref?.externalUri ?? ""));
    },

    // A memory ref clones the parent's snapshot (a fan-out of one); otherwise the child is a fresh
    // actor the host replays the child's journal to.
    async fork(req, ctx) {
      const child = actorName(req.childSessionUid, "child_session_uid");
      checkHarness(req.spec?.harness);
      const dialback = dialbackOf(req.dialback);
      if (!req.ref?.memory) return incarnation(await actors.create(child, dialback));
      const { parent, externalUri } = memoryParent(req.ref);
      if (parent === child) throw new ConnectError("child_session_uid names the parent", Code.InvalidArgument);
      const [p] = await actors.forkMany(parent, externalUri, [{ uid: child, dialback }], ctx.signal);
      return incarnation(p!);
    },

    async forkMany(req, ctx) {
      checkHarness(req.spec?.harness);
      const { parent, externalUri } = memoryParent(req.ref);
      if (req.children.length === 0) throw new ConnectError("children is empty: a fan-out places at least one child", Code.InvalidArgument);
      if (req.children.length > MAX_CHILDREN)
        throw new ConnectError(`${req.children.length} children: at most ${MAX_CHILDREN} per fan-out`, Code.InvalidArgument);
      const seen = new Set<string>([parent]);
      const children = req.children.map((c, i) => {
        const uid = actorName(c.sessionUid, `children[${i}].session_uid`);
        if (seen.has(uid)) throw new ConnectError(`children[${i}].session_uid ${uid} is the parent or another child`, Code.InvalidArgument);
        seen.add(uid);
        return { uid, dialback: dialbackOf(c.dialback, `children[${i}].dialback`) };
      });
      const placed = await actors.forkMany(parent, externalUri, children, ctx.signal);
      return { incarnations: placed.map(incarnation) };
    },

    async stop(req) {
      await actors.stop(actorName(req.incarnation?.id, "incarnation.id"));
      return {};
    },

    async status(req) {
      return { state: await actors.status(actorName(req.incarnation?.id, "incarnation.id")) };
    },
  };
}

function notHosted(asked: string, hosted: string): ConnectError {
  return new ConnectError(`harness ${JSON.stringify(asked)} is not hosted here (hosted: ${hosted})`, Code.NotFound);
}

function actorName(v: string | undefined, field: string): string {
  if (!v) throw new ConnectError(`${field} is required`, Code.InvalidArgument);
  if (!ACTOR_NAME_RE.test(v))
    throw new ConnectError(`${field} ${JSON.stringify(v)} cannot name an actor: lowercase letters, digits and -, at most 58`, Code.InvalidArgument);
  return v;
}

/** The parent of a memory fork, from the ref its checkpoint answered. */
function memoryParent(ref: { local: string; externalUri: string; memory: boolean } | undefined): { parent: string; externalUri: string } {
  const parent = actorName(ref?.local, "ref.local");
  if (!ref?.memory || !ref.externalUri) {
    throw new ConnectError(
      `the parent's snapshot ref holds no memory snapshot (memory=${ref?.memory ?? false}, external_uri=${JSON.stringify(ref?.externalUri ?? "")}): a memory fork clones the snapshot Snapshot(EXTERNAL) answered`,
      Code.FailedPrecondition,
    );
  }
  return { parent, externalUri: ref.externalUri };
}

/** The bridge places harnesses that dial back: without a dialback there is nothing to attach. */
function dialbackOf(d: WireDialback | undefined, field = "dialback"): Dialback {
  if (!d?.tunnelUrl || !d.token)
    throw new ConnectError(`${field} (tunnel_url and token) is required: substrate actors dial back to the host`, Code.InvalidArgument);
  let u: URL;
  try {
    u = new URL(d.tunnelUrl);
  } catch {
    throw new ConnectError(`${field}.tunnel_url is not a URL`, Code.InvalidArgument);
  }
  if (!["http:", "https:", "ws:", "wss:"].includes(u.protocol)) throw new ConnectError(`${field}.tunnel_url must be http(s) or ws(s)`, Code.InvalidArgument);
  return { tunnelUrl: d.tunnelUrl, token: d.token };
}
