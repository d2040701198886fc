/**
 * The HTTP runtime: the Runtime SPI (runtimes/runtime-spi.ts, docs/contract.md §6.1) as a Connect
 * client of a backend serving `agentsessions.edge.v1.Runtime` (runtime.proto), e.g. the pod runtime
 * (runtimes/pod). Create, Restore and Fork forward the spec's Dialback (tunnel URL and one-time
 * token) so the harness the backend starts connects back over the tunnel (docs/tunnel.md).
 *
 * With a `token` (the host's RUNTIME_TOKEN secret) every call carries `Authorization: Bearer`;
 * backends that require one refuse calls without it (docs/runtimes.md "Authentication").
 *
 * `capabilities()` is synchronous in the SPI, so it answers the last capabilities fetched: all false
 * until the first fetch (the conservative answer: CanPlace then refuses memory-snapshot harnesses).
 * `describe()`, which the host calls before CanPlace, fetches them the first time alongside the
 * descriptor; `refreshCapabilities()` fetches again.
 *
 * Runs in workerd (imported by the session host): no Node imports. Tested against the pod server
 * in test/node/pod/.
 * @experimental
 */
import { create } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { Runtime as RuntimeService } from "../../proto/gen/agentsessions/edge/v1/runtime_pb.js";
import type { HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { RuntimeCapabilitiesSchema, type RuntimeCapabilities } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { ForkChild, Incarnation, Runtime, SessionSpec } from "../runtime-spi.js";
import type { SnapshotRef } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { badAnswerError, httpRuntimeError } from "./http-runtime-error.js";
import { createRuntimeFetch } from "./runtime-fetch.js";
import {
  computeStateFromWire,
  dialbackToWire,
  forkChildToWire,
  incarnationFromWire,
  incarnationsFromWire,
  incarnationToWire,
  sessionSpecToWire,
  snapshotKindToWire,
} from "./runtime-wire.js";

export interface HttpRuntimeOptions {
  /** The backend's base URL (the Runtime service is served under it), e.g. http://127.0.0.1:9400 */
  baseUrl: string;
  /** Defaults to the global fetch (a service binding's fetch works too). */
  fetch?: typeof globalThis.fetch;
  /** The runtime's name in this host's messages (default "http"). */
  name?: string;
  /**
   * Per-call timeout (default 30 s). Create, Restore and Fork wait for the harness to dial back and
   * Snapshot(EXTERNAL) for a graceful stop, so keep it above the backend's own bounds.
   */
  timeoutMs?: number;
  /**
   * Timeout of one ForkMany (default 5 minutes): every child is a snapshot copy and a restore, each
   * seconds on a real cluster. The backend tears down what it made when the call is cut.
   */
  forkManyTimeoutMs?: number;
  /** Sent as `Authorization: Bearer <token>` on every call. A secret: never logged. */
  token?: string;
}

/** A Runtime plus what the host's placement gate needs before provisioning (docs/behaviour.md §5.1). */
export interface HttpRuntime extends Runtime {
  /** The descriptor of a harness the backend hosts, without starting it. NOT_FOUND if unknown. */
  describe(harness: string, signal?: AbortSignal): Promise<HarnessDescriptor>;
  /** Fetches the backend's capabilities and keeps them for `capabilities()`. */
  refreshCapabilities(signal?: AbortSignal): Promise<RuntimeCapabilities>;
  /** Every HTTP backend can be asked; those without memory snapshots answer FAILED_PRECONDITION. */
  forkMany(ref: SnapshotRef, children: readonly ForkChild[], spec: SessionSpec): Promise<Incarnation[]>;
}

export const HTTP_RUNTIME = "http";
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_FORK_MANY_TIMEOUT_MS = 5 * 60_000;

export function createHttpRuntime(o: HttpRuntimeOptions): HttpRuntime {
  const target = displayUrl(o.baseUrl);
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const client: Client<typeof RuntimeService> = createClient(
    RuntimeService,
    createConnectTransport({
      baseUrl: o.baseUrl,
      useBinaryFormat: true,
      interceptors: o.token ? [bearer(o.token)] : [],
      // Bound to globalThis: workerd refuses a fetch called with another `this`.
      fetch: createRuntimeFetch(o.fetch ?? ((input, init) => globalThis.fetch(input, init))),
    }),
  );
  let caps: RuntimeCapabilities | undefined;

  const call = async <T>(op: string, rpc: () => Promise<T>): Promise<T> => {
    try {
      return await rpc();
    } catch (e) {
      throw httpRuntimeError(target, op, e);
    }
  };
  const answer = <T>(op: string, convert: () => T): T => {
    try {
      return convert();
    } catch (e) {
      throw badAnswerError(target, op, e);
    }
  };
  const placed = (op: string, expectedId: string, w: Parameters<typeof incarnationFromWire>[0]): Incarnation =>
    answer(op, () => incarnationFromWire(w, expectedId));

  const refreshCapabilities = async (signal?: AbortSignal): Promise<RuntimeCapabilities> => {
    caps = await call("Capabilities", () => client.capabilities({}, { signal, timeoutMs }));
    return caps;
  };

  return {
    name: o.name ?? HTTP_RUNTIME,
    capabilities: () => caps ?? create(RuntimeCapabilitiesSchema, {}),
    refreshCapabilities,

    async describe(harness, signal) {
      const [descriptor] = await Promise.all([
        call("Describe", () => client.describe({ harness }, { signal, timeoutMs })),
        caps === undefined ? refreshCapabilities(signal) : undefined,
      ]);
      return descriptor;
    },

    async create(spec) {
      const w = await call("Create", () => client.create({ spec: sessionSpecToWire(spec), dialback: dialbackToWire(spec) }, { timeoutMs }));
      return placed("Create", spec.sessionUid, w);
    },

    snapshot: (inc, kind) => call("Snapshot", () => client.snapshot({ incarnation: incarnationToWire(inc), kind: snapshotKindToWire(kind) }, { timeoutMs })),

    async restore(ref, spec) {
      const w = await call("Restore", () => client.restore({ ref, spec: sessionSpecToWire(spec), dialback: dialbackToWire(spec) }, { timeoutMs }));
      return placed("Restore", spec.sessionUid || ref.local, w);
    },

    async fork(ref, opts, spec) {
      const w = await call("Fork", () =>
        client.fork(
          { ref, childSessionUid: opts.childSessionUid, copyOnWrite: opts.copyOnWrite, spec: sessionSpecToWire(spec), dialback: dialbackToWire(spec) },
          { timeoutMs },
        ),
      );
      return placed("Fork", opts.childSessionUid, w);
    },

    async forkMany(ref, children, spec) {
      const w = await call("ForkMany", () =>
        client.forkMany(
          { ref, spec: sessionSpecToWire(spec), children: children.map(forkChildToWire) },
          { timeoutMs: o.forkManyTimeoutMs ?? DEFAULT_FORK_MANY_TIMEOUT_MS },
        ),
      );
      return answer("ForkMany", () =>
        incarnationsFromWire(
          w.incarnations,
          children.map((c) => c.sessionUid),
        ),
      );
    },

    async stop(inc) {
      await call("Stop", () => client.stop({ incarnation: incarnationToWire(inc) }, { timeoutMs }));
    },

    async status(inc) {
      const r = await call("Status", () => client.status({ incarnation: incarnationToWire(inc) }, { timeoutMs }));
      return answer("Status", () => computeStateFromWire(r.state));
    },
  };
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** The URL for messages: no credentials, query or fragment (none are expected; never echo one). */
function displayUrl(s: string): string {
  try {
    const u = new URL(s);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`;
  } catch {
    return "(invalid URL)";
  }
}
