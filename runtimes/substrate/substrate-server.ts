/**
 * The substrate bridge server: the Runtime service (runtime.proto) over Connect on node:http
 * (runtimes/node/rpc-server.ts, as the pod serves it), driving agent-substrate's ateapi over gRPC
 * and delivering each incarnation's dialback through the cluster's router. main.ts runs it from the
 * command line; tests start it in process. Tested in test/node/substrate/.
 */
import { Runtime } from "../../proto/gen/agentsessions/edge/v1/runtime_pb.js";
import { startRpcServer } from "../node/rpc-server.js";
import { stdoutLog, type RuntimeLog } from "../node/runtime-log.js";
import { SubstrateActors } from "./actors.js";
import { createAteapiClient } from "./ateapi-client.js";
import { createAttacher } from "./attach.js";
import { createSubstrateService, type HostedHarness } from "./substrate-service.js";

export interface SubstrateServerOptions {
  /** ateapi's address, e.g. https://api.ate-system.svc:443 (http:// dials cleartext HTTP/2). */
  ateapiUrl: string;
  /** The atespace every actor and tag of this bridge lives in. */
  atespace: string;
  /** The ActorTemplate every actor is created from (its image runs the actor agent and the harness). */
  template: string;
  /** The template's atespace (default: `atespace`). */
  templateAtespace?: string;
  /** What Describe answers. */
  harness: HostedHarness;
  /** The router that reaches actors by `ate-target-actor`, e.g. http://atenet-router.ate-system.svc */
  routerUrl: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Required from the host as `Authorization: Bearer` on every call when set. */
  token?: string;
  /** Sent to the actor agents on Attach, when they require one. */
  attachToken?: string;
  /** A file holding ateapi's bearer token (a projected ServiceAccount token), re-read per call. */
  ateapiTokenFile?: string;
  /** PEM of the CA of ateapi's server certificate. */
  ateapiCa?: string;
  ateapiTimeoutMs?: number;
  attachTimeoutMs?: number;
  forkParallelism?: number;
  cleanupMs?: number;
  log?: RuntimeLog;
}

export interface SubstrateServer {
  url: string;
  port: number;
  /** Stops listening and closes the connection to ateapi. Actors are left as they are: they are the sessions' state. */
  close(): Promise<void>;
}

export async function startSubstrateServer(o: SubstrateServerOptions): Promise<SubstrateServer> {
  const log = o.log ?? stdoutLog;
  const ateapi = createAteapiClient({ url: o.ateapiUrl, atespace: o.atespace, tokenFile: o.ateapiTokenFile, ca: o.ateapiCa, timeoutMs: o.ateapiTimeoutMs });
  const attach = createAttacher({ routerUrl: o.routerUrl, atespace: o.atespace, attachToken: o.attachToken, timeoutMs: o.attachTimeoutMs });
  const actors = new SubstrateActors({
    ateapi,
    attach,
    template: { atespace: o.templateAtespace ?? o.atespace, name: o.template },
    log,
    forkParallelism: o.forkParallelism,
    cleanupMs: o.cleanupMs,
  });
  const server = await startRpcServer({
    routes: (router) => router.service(Runtime, createSubstrateService(o.harness, actors)),
    log,
    port: o.port,
    host: o.host,
    token: o.token,
  });
  return {
    url: server.url,
    port: server.port,
    close: async () => {
      await server.close();
      ateapi.close();
    },
  };
}
