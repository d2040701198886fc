/**
 * The bindings and vars of the Worker and its Durable Objects (wrangler.toml).
 */
import type { BenchObject } from "./bench-object.js";
import type { ConfigEnv } from "./config.js";
import type { Directory } from "./directory/object.js";
import type { HarnessTunnel } from "./tunnel/object.js";
import type { SessionObject } from "./session/object.js";
import type { TenantLimiter } from "./limits/object.js";

export interface Env extends ConfigEnv {
  SESSIONS: DurableObjectNamespace<SessionObject>;
  DIRECTORY: DurableObjectNamespace<Directory>;
  HARNESS_TUNNELS: DurableObjectNamespace<HarnessTunnel>;
  /** One per tenant: request rate and concurrent executions (objects/limits). */
  TENANT_LIMITS: DurableObjectNamespace<TenantLimiter>;
  /** Large parts of journaled events, content-addressed (docs/blobs.md); without it parts stay inline. */
  BLOBS?: R2Bucket;
  /** Used only by the benchmark routes (bench/). */
  BENCH_OBJECT: DurableObjectNamespace<BenchObject>;
  /** "1" exposes the benchmark routes (bench/); never set in a deployment. */
  BENCH?: string;
}

/** Session objects are named `<tenant>/<uid>`: one tenant can never address another's session. */
export function sessionStub(env: Env, tenant: string, uid: string): DurableObjectStub<SessionObject> {
  return env.SESSIONS.get(env.SESSIONS.idFromName(`${tenant}/${uid}`));
}

export function directoryStub(env: Env, tenant: string): DurableObjectStub<Directory> {
  return env.DIRECTORY.get(env.DIRECTORY.idFromName(tenant));
}

/** Tunnels are named `<tenant>/<harness name>`: a harness serves one tenant only. */
export function tunnelStub(env: Env, tenant: string, name: string): DurableObjectStub<HarnessTunnel> {
  return env.HARNESS_TUNNELS.get(env.HARNESS_TUNNELS.idFromName(`${tenant}/${name}`));
}

export function limiterStub(env: Env, tenant: string): DurableObjectStub<TenantLimiter> {
  return env.TENANT_LIMITS.get(env.TENANT_LIMITS.idFromName(tenant));
}
