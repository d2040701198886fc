/**
 * The Runtime SPI (docs/contract.md §6.1, docs/behaviour.md §5.1): how a session's compute is placed,
 * checkpointed, restored, forked and stopped. The SessionObject drives it; the built-in runtime
 * (runtimes/builtin/runtime.ts) runs harnesses in the session's own isolate, and remote backends
 * implement the same interface over HTTP. Plain TypeScript with no Cloudflare imports.
 * @experimental
 */
import type { IdentityRef } from "../proto/gen/agentsessions/v1/common_pb.js";
import type { ComputeState, RuntimeCapabilities, SnapshotRef } from "../proto/gen/agentsessions/v1/session_pb.js";

export interface SessionSpec {
  sessionUid: string;
  /** The registry name of the harness to place. */
  harness: string;
  identity?: IdentityRef;
  /**
   * Where a runtime that starts the harness out of process has it connect back (docs/tunnel.md
   * "Runtimes"): the host's tunnel URL and a one-time token minted for this session. The token is
   * a secret: never log it. Runtimes that run harnesses in process (builtin) ignore it.
   */
  dialback?: { tunnelUrl: string; token: string };
}

/** One placement of a session's compute. The fence is stamped by the session, not the runtime. */
export interface Incarnation {
  id: string;
  worker: string;
  /** Where the harness answers (empty for in-isolate harnesses). */
  address: string;
  runtime: string;
  fence: bigint;
}

/** LOCAL keeps the worker (warm pause); EXTERNAL frees it (cold suspend). */
export type SnapshotKind = "LOCAL" | "EXTERNAL";

export interface ForkOptions {
  childSessionUid: string;
  copyOnWrite: boolean;
}

/** One child of a memory fan-out (`forkMany`): its session uid and the dialback minted for it. */
export interface ForkChild {
  sessionUid: string;
  /** The child's own tunnel URL and one-time token (a secret: never log it). */
  dialback?: { tunnelUrl: string; token: string };
}

export interface Runtime {
  readonly name: string;
  capabilities(): RuntimeCapabilities;
  create(spec: SessionSpec): Promise<Incarnation>;
  snapshot(inc: Incarnation, kind: SnapshotKind): Promise<SnapshotRef>;
  restore(ref: SnapshotRef, spec: SessionSpec): Promise<Incarnation>;
  fork(ref: SnapshotRef, opts: ForkOptions, spec: SessionSpec): Promise<Incarnation>;
  /**
   * A memory fork's fan-out (docs/runtimes.md "ForkMany"): one incarnation per child, each cloned
   * from the one memory snapshot `ref` (what `snapshot(parent, "EXTERNAL")` answered, taken once for
   * the fan-out), answered in `children` order. All or nothing: on failure nothing it made is left.
   * `spec` is the parent's. Only runtimes whose capabilities say memory_snapshot implement it.
   */
  forkMany?(ref: SnapshotRef, children: readonly ForkChild[], spec: SessionSpec): Promise<Incarnation[]>;
  stop(inc: Incarnation): Promise<void>;
  status(inc: Incarnation): Promise<ComputeState>;
}

/** A runtime refused an operation it cannot do (e.g. a warm pause on a journal-only runtime). */
export class RuntimeUnsupportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RuntimeUnsupportedError";
  }
}
