/**
 * Shared pieces of the substrate bridge tests: the stand-in ateapi (test/fixtures/ateapi) with a
 * template per example harness, the bridge in process pointed at it, the host's HTTP runtime client
 * pointed at the bridge, and a fake host tunnel with one-time tokens that can run executions. A
 * kept log checks that no token is ever written. `close()` stops everything, actor processes too.
 */
import { createHttpRuntime, type HttpRuntime } from "../../../runtimes/http/index.js";
import type { SessionSpec } from "../../../runtimes/runtime-spi.js";
import { loadHostedHarness, startSubstrateServer, type SubstrateServer, type SubstrateServerOptions } from "../../../runtimes/substrate/index.js";
import { startStandin, type Standin, type StandinOptions } from "../../fixtures/ateapi/standin.js";
import { startFakeTunnel, type FakeTunnel } from "../pod/fake-tunnel.js";
import { HARNESSES, uid } from "../pod/support.js";

export const ATESPACE = "agentsessions";
export { HARNESSES, uid };

export interface SubstrateFixture {
  standin: Standin;
  bridge: SubstrateServer;
  runtime: HttpRuntime;
  tunnel: FakeTunnel;
  logs: string[];
  /** The harness the bridge hosts (its template runs it). */
  harness: string;
  spec(uid: string): SessionSpec;
  close(): Promise<void>;
}

export interface FixtureOptions {
  /** Which example harness the bridge's template runs (default counter). */
  harness?: keyof typeof HARNESSES;
  standin?: Partial<StandinOptions>;
  bridge?: Partial<SubstrateServerOptions>;
  /** The host's token for the bridge (also set on the bridge unless `bridge.token` says otherwise). */
  token?: string;
}

export async function startSubstrateFixture(o: FixtureOptions = {}): Promise<SubstrateFixture> {
  const harness = o.harness ?? "counter";
  const tunnel = await startFakeTunnel({ oneTime: true });
  const standin = await startStandin({ atespaces: [ATESPACE], templates: { [harness]: HARNESSES[harness] }, ...o.standin });
  const logs: string[] = [];
  const bridge = await startSubstrateServer({
    ateapiUrl: standin.url,
    atespace: ATESPACE,
    template: harness,
    harness: await loadHostedHarness(`${harness}=${HARNESSES[harness]}`),
    routerUrl: standin.routerUrl,
    token: o.token,
    log: (f) => void logs.push(JSON.stringify(f)),
    attachTimeoutMs: 20_000,
    ...o.bridge,
  });
  const runtime = createHttpRuntime({ baseUrl: bridge.url, token: o.token, timeoutMs: 45_000 });
  return {
    standin,
    bridge,
    runtime,
    tunnel,
    logs,
    harness,
    spec: (u) => ({ sessionUid: u, harness, dialback: tunnel.dialback(harness, u) }),
    async close() {
      await bridge.close();
      await standin.close();
      await tunnel.close();
    },
  };
}
