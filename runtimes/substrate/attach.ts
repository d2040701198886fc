/**
 * The attach step (docs/runtimes.md "The attach step"): after every create, restore and fork the
 * bridge hands the actor's harness its session's Dialback, so it dials back to the host's tunnel as
 * a pod incarnation does. The actor's memory is a snapshot shared by every actor of the template
 * (or cloned from another session), so nothing in it can say which session it serves now.
 *
 * The call is `agentsessions.edge.v1.ActorAgent/Attach` (actor_agent.proto), Connect over HTTP/1.1,
 * sent to the cluster's router with `ate-target-actor: <atespace>/<actor>`; the router forwards it
 * to the actor's port 80, where the actor agent (runtimes/substrate/agent) serves it. It answers
 * once the host has welcomed the harness. The request carries a one-time token: never logged.
 * @internal Used by actors.ts and memory-fork.ts; tested in test/node/substrate/.
 */
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ActorAgent } from "../../proto/gen/agentsessions/edge/v1/actor_agent_pb.js";
import { attachError } from "./substrate-error.js";

/** The G3 router's actor selector. */
export const TARGET_ACTOR_HEADER = "ate-target-actor";

export interface Dialback {
  tunnelUrl: string;
  token: string;
}

export interface AttacherOptions {
  /** The router's base URL, e.g. http://atenet-router.ate-system.svc */
  routerUrl: string;
  atespace: string;
  /** The actor agents' shared token (AGENTSESSIONS_ATTACH_TOKEN), when they require one. */
  attachToken?: string;
  /** How long one attach may take; above the agent's own wait for the Welcome. Default 60 s. */
  timeoutMs?: number;
}

/**
 * Delivers `dialback` to actor `name` for `sessionUid`; resolves with the host's connection id.
 * `signal` cuts the wait (a fan-out whose caller gave up): nothing in ateapi changes mid-attach.
 */
export type Attach = (name: string, sessionUid: string, dialback: Dialback, restored: boolean, signal?: AbortSignal) => Promise<string>;

export function createAttacher(o: AttacherOptions): Attach {
  const client: Client<typeof ActorAgent> = createClient(
    ActorAgent,
    createConnectTransport({ baseUrl: o.routerUrl, httpVersion: "1.1", useBinaryFormat: true }),
  );
  const router = displayUrl(o.routerUrl);
  return async (name, sessionUid, dialback, restored, signal) => {
    const target = `${o.atespace}/${name}`;
    const headers: Record<string, string> = { [TARGET_ACTOR_HEADER]: target };
    if (o.attachToken) headers.authorization = `Bearer ${o.attachToken}`;
    try {
      const r = await client.attach({ sessionUid, dialback, restored }, { headers, timeoutMs: o.timeoutMs ?? 60_000, signal });
      return r.connectionId;
    } catch (e) {
      throw attachError(router, target, e);
    }
  };
}

function displayUrl(s: string): string {
  try {
    const u = new URL(s);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "(invalid URL)";
  }
}
