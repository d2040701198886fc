/**
 * The pod runtime server: the Runtime service (runtime.proto) over Connect on node:http (HTTP/1.1,
 * runtimes/node/rpc-server.ts), starting one child process per session for the harness modules it
 * was given. main.ts runs it from the command line; tests start it in process. Tested in
 * test/node/pod/.
 */
import { Runtime } from "../../proto/gen/agentsessions/edge/v1/runtime_pb.js";
import type { HarnessModules } from "../node/harness-modules.js";
import { startRpcServer } from "../node/rpc-server.js";
import { stdoutLog, type RuntimeLog } from "../node/runtime-log.js";
import { IncarnationPool } from "./incarnations.js";
import { createPodService } from "./pod-service.js";

export interface PodServerOptions {
  harnesses: HarnessModules;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. Anything else needs a token (main.ts refuses to start without one). */
  host?: string;
  /** Required as `Authorization: Bearer <token>` on every request when set (docs/runtimes.md "Authentication"). */
  token?: string;
  log?: RuntimeLog;
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
  const server = await startRpcServer({
    routes: (router) => router.service(Runtime, createPodService(o.harnesses, pool)),
    log,
    port: o.port,
    host: o.host,
    token: o.token,
  });
  return {
    url: server.url,
    port: server.port,
    close: () => server.close(() => pool.close()),
    killAllNow: () => pool.killAllNow(),
  };
}
