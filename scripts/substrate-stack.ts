/**
 * The memory tier's backends on one machine, next to a running host: the TEST-ONLY stand-in
 * ateapi (test/fixtures/ateapi: the pinned protos over real gRPC, the actor state machine, each
 * running actor a process; memory "snapshots" come from a test-only hook of the harness, because
 * this machine cannot checkpoint a process: docs/runtimes.md "What this repository tests") and one
 * substrate bridge per harness in this process, on free loopback ports, each harness registered
 * on the host as an http_runtime harness the bridge places. The host must have been started with
 * `RUNTIME_TOKEN` = `token`. Used by `npm run demo:substrate` (scripts/demo-substrate.ts) and
 * test/node/integration/memory-tier.test.ts. `close()` stops the bridges, then the stand-in (which
 * kills every actor process).
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { resolve } from "node:path";
import type { Resumability } from "../proto/gen/agentsessions/v1/harness_pb.js";
import { EdgeRegistry } from "../proto/gen/agentsessions/edge/v1/placement_pb.js";
import type { RuntimeLog } from "../runtimes/node/runtime-log.js";
import { loadHostedHarness, startSubstrateServer, type SubstrateServer } from "../runtimes/substrate/index.js";
import { startStandin, type Standin } from "../test/fixtures/ateapi/standin.js";
import { ROOT } from "./dev-server.js";

export const ATESPACE = "agentsessions";

export interface StackHarness {
  /** The harness module (relative to the repository root), which the template's actors run. */
  module: string;
  /** What the registration declares (the bridge's Describe answers the module's own descriptor). */
  resumability: Resumability;
}

export interface SubstrateBackends {
  standin: Standin;
  /** One bridge per harness name, serving that harness's template. */
  bridges: Record<string, SubstrateServer>;
  close(): Promise<void>;
}

export async function startSubstrateBackends(o: {
  hostUrl: string;
  /** The host's RUNTIME_TOKEN, which the bridges require. */
  token: string;
  harnesses: Record<string, StackHarness>;
  log?: RuntimeLog;
}): Promise<SubstrateBackends> {
  const modules = Object.fromEntries(Object.entries(o.harnesses).map(([name, h]) => [name, resolve(ROOT, h.module)]));
  const standin = await startStandin({ atespaces: [ATESPACE], templates: modules });
  const bridges: Record<string, SubstrateServer> = {};
  const close = async () => {
    for (const b of Object.values(bridges)) await b.close();
    await standin.close();
  };
  try {
    const registry = createClient(EdgeRegistry, createConnectTransport({ baseUrl: o.hostUrl }));
    for (const [name, h] of Object.entries(o.harnesses)) {
      bridges[name] = await startSubstrateServer({
        ateapiUrl: standin.url,
        atespace: ATESPACE,
        template: name,
        harness: await loadHostedHarness(`${name}=${modules[name]}`),
        routerUrl: standin.routerUrl,
        token: o.token,
        log: o.log ?? (() => undefined),
      });
      await registry.registerHarness({
        name,
        spec: { capabilities: { resumability: h.resumability } },
        placement: { placement: { case: "httpRuntime", value: { url: bridges[name].url } } },
      });
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { standin, bridges, close };
}
