/**
 * The pod runtime server: the Runtime service (runtime.proto) over Connect on node:http (HTTP/1.1),
 * starting one child process per session for the harness modules it was given. main.ts runs it
 * from the command line; tests start it in process. Tested in test/node/pod/.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createConnectRouter } from "@connectrpc/connect";
import { Runtime } from "../../proto/gen/agentsessions/edge/v1/runtime_pb.js";
import type { HarnessModules } from "./harness-modules.js";
import { IncarnationPool } from "./incarnations.js";
import { createNodeHandler } from "./node-handler.js";
import { rpcLog, stdoutLog, type PodLog } from "./pod-log.js";
import { createPodService } from "./pod-service.js";

/** Runtime requests are small; a larger one is refused before it is parsed. */
const MAX_REQUEST_BYTES = 1024 * 1024;

export interface PodServerOptions {
  harnesses: HarnessModules;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1: the Runtime service has no authentication of its own. */
  host?: string;
  log?: PodLog;
  /** How long Create, Restore and Fork wait for the harness to dial back (default 15 s). */
  readyTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL when an incarnation is stopped (default 5 s). */
  stopGraceMs?: number;
}

export interface PodServer {
  /** e.g. http://127.0.0.1:9400, the HTTP runtime's baseUrl. */
  url: string;
  port: number;
  /** Stops listening and ends every incarnation (SIGTERM, then SIGKILL after the grace period). */
  close(): Promise<void>;
  /** For a process "exit" handler: SIGKILL every incarnation, synchronously. */
  killAllNow(): void;
}

export async function startPodServer(o: PodServerOptions): Promise<PodServer> {
  const log = o.log ?? stdoutLog;
  const pool = new IncarnationPool({ modules: o.harnesses, log, readyTimeoutMs: o.readyTimeoutMs ?? 15_000, stopGraceMs: o.stopGraceMs ?? 5_000 });
  const router = createConnectRouter({
    grpc: false,
    grpcWeb: false,
    interceptors: [rpcLog(log)],
    readMaxBytes: MAX_REQUEST_BYTES,
    jsonOptions: { ignoreUnknownFields: false },
  });
  router.service(Runtime, createPodService(o.harnesses, pool));
  const http = createServer(createNodeHandler(router.handlers));
  http.listen(o.port ?? 0, o.host ?? "127.0.0.1");
  await once(http, "listening");
  const { address, port } = http.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((r) => http.close(() => r()));
        http.closeIdleConnections();
        await pool.close();
        http.closeAllConnections();
        await stopped;
      })()),
    killAllNow: () => pool.killAllNow(),
  };
}
