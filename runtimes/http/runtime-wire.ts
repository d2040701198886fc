/**
 * Converters between the Runtime SPI's TypeScript shapes (runtimes/runtime-spi.ts) and the
 * Runtime service's messages (proto/agentsessions/edge/v1/runtime.proto).
 * @internal Used by http-runtime.ts; the pod runtime server has its own (it serves the wire shapes).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  DialbackSchema,
  ForkChildSchema,
  IncarnationSchema,
  SessionSpecSchema,
  SnapshotKind as WireSnapshotKind,
  type Incarnation as WireIncarnation,
} from "../../proto/gen/agentsessions/edge/v1/runtime_pb.js";
import { ComputeState } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { ForkChild, Incarnation, SessionSpec, SnapshotKind } from "../runtime-spi.js";

export function snapshotKindToWire(kind: SnapshotKind): WireSnapshotKind {
  switch (kind) {
    case "LOCAL":
      return WireSnapshotKind.LOCAL;
    case "EXTERNAL":
      return WireSnapshotKind.EXTERNAL;
  }
}

export function sessionSpecToWire(spec: SessionSpec): MessageInitShape<typeof SessionSpecSchema> {
  return create(SessionSpecSchema, { sessionUid: spec.sessionUid, harness: spec.harness, identity: spec.identity });
}

/** Unset when the spec carries none: the backend decides whether it can do without. */
export function dialbackToWire(spec: SessionSpec): MessageInitShape<typeof DialbackSchema> | undefined {
  return spec.dialback && create(DialbackSchema, { tunnelUrl: spec.dialback.tunnelUrl, token: spec.dialback.token });
}

export function forkChildToWire(c: ForkChild): MessageInitShape<typeof ForkChildSchema> {
  return create(ForkChildSchema, { sessionUid: c.sessionUid, dialback: dialbackToWire({ sessionUid: c.sessionUid, harness: "", dialback: c.dialback }) });
}

/** A fan-out answer must place exactly the children asked for, in order: anything else would cross sessions. */
export function incarnationsFromWire(ws: readonly WireIncarnation[], expectedIds: readonly string[]): Incarnation[] {
  if (ws.length !== expectedIds.length) throw new ConnectError(`answered ${ws.length} incarnations for ${expectedIds.length} children`, Code.Internal);
  return ws.map((w, i) => incarnationFromWire(w, expectedIds[i]!));
}

export function incarnationToWire(inc: Incarnation): WireIncarnation {
  return create(IncarnationSchema, { id: inc.id, worker: inc.worker, address: inc.address, runtime: inc.runtime, fence: inc.fence });
}

/** Refuses an answer for another session than the one asked about: placing it would cross sessions. */
export function incarnationFromWire(w: WireIncarnation, expectedId: string): Incarnation {
  if (w.id !== expectedId) {
    throw new ConnectError(`answered an incarnation for ${JSON.stringify(w.id)}, asked for ${JSON.stringify(expectedId)}`, Code.Internal);
  }
  return { id: w.id, worker: w.worker, address: w.address, runtime: w.runtime, fence: w.fence };
}

const KNOWN_STATES = new Set<ComputeState>([
  ComputeState.COMPUTE_NONE,
  ComputeState.COMPUTE_LIVE,
  ComputeState.COMPUTE_WARM,
  ComputeState.COMPUTE_COLD,
  ComputeState.COMPUTE_TERMINATED,
]);

/** UNSPECIFIED or a number this build does not know is a backend bug, not a state to act on. */
export function computeStateFromWire(s: ComputeState): ComputeState {
  if (!KNOWN_STATES.has(s)) throw new ConnectError(`answered an unknown compute state ${s}`, Code.Internal);
  return s;
}
