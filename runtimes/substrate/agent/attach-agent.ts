/**
 * The actor agent: what runs inside each substrate actor next to the harness (docs/runtimes.md
 * "The attach step"). It serves `agentsessions.edge.v1.ActorAgent` (actor_agent.proto) on the
 * actor's port; the bridge calls Attach through the router after every create, restore and fork.
 *
 * The actor's memory is a snapshot: the template's golden one (shared by every actor) or a clone of
 * another session's. So the harness learns which session it serves, and where that session's host
 * is, only from Attach. Each Attach serves the harness on a new connection with the one-time token
 * it carries (runtimes/node/dialback-serve.ts), and answers once the host has welcomed it:
 *   - `restored`: the actor was just restored, so any connection it remembers died with the
 *     checkpoint; it dials again even if it believes it is connected;
 *   - the same session, still connected, not restored: the connection is kept (the token unused);
 *   - another session (a fork child's first attach carries its own uid): the old connection,
 *     cloned from the parent, is closed first, so a child never serves its parent's session.
 * A connection lost after its Welcome is not re-dialled (the token is spent): the next Attach
 * brings a fresh one. Attaches run one at a time.
 * @internal Started by agent/main.ts (and by the test stand-in's actors); tested in
 * test/node/substrate/.
 */
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { ActorAgent } from "../../../proto/gen/agentsessions/edge/v1/actor_agent_pb.js";
import type { Harness } from "../../harness-spi.js";
import { serveDialback, type DialbackServing } from "../../node/dialback-serve.js";
import { createKeyedQueue } from "../../node/keyed-queue.js";
import { startRpcServer, type RpcServer } from "../../node/rpc-server.js";
import type { RuntimeLog } from "../../node/runtime-log.js";

/** The token the agents require on Attach and the bridge sends (both read it from here). */
export const ATTACH_TOKEN_ENV = "AGENTSESSIONS_ATTACH_TOKEN";

export interface AttachAgentOptions {
  harness: Harness;
  /** The name the harness serves under when the tunnel URL names none. */
  name: string;
  port?: number;
  host?: string;
  /** Required on Attach as `Authorization: Bearer` when set. */
  token?: string;
  /** How long an Attach waits for the host's Welcome (default 30 s). */
  readyTimeoutMs?: number;
  /** How long open executions may finish when a connection is replaced or the agent stops (default 2 s). */
  drainMs?: number;
  log: RuntimeLog;
}

export interface AttachAgent {
  url: string;
  port: number;
  /** The session served now ("" before the first Attach). */
  readonly session: string;
  /** Stops serving the harness and the agent. */
  close(): Promise<void>;
}

export async function startAttachAgent(o: AttachAgentOptions): Promise<AttachAgent> {
  let current: { session: string; serving: DialbackServing; connectionId: string } | undefined;
  const queue = createKeyedQueue();
  const readyMs = o.readyTimeoutMs ?? 30_000;
  const drainMs = o.drainMs ?? 2_000;

  const impl: ServiceImpl<typeof ActorAgent> = {
    attach: (req) =>
      queue.run("attach", async () => {
        if (!req.sessionUid) throw new ConnectError("session_uid is required", Code.InvalidArgument);
        const d = req.dialback;
        if (!d?.tunnelUrl || !d.token) throw new ConnectError("dialback (tunnel_url and token) is required", Code.InvalidArgument);
        if (!req.restored && current?.session === req.sessionUid && current.serving.live) {
          return { connectionId: current.connectionId, keptConnection: true };
        }
        if (current) {
          const old = current;
          current = undefined;
          await old.serving.close();
        }
        let serving: DialbackServing;
        try {
          serving = serveDialback({ dialback: { tunnelUrl: d.tunnelUrl, token: d.token }, harness: o.harness, fallbackName: o.name, drainMs });
        } catch (e) {
          throw new ConnectError(`cannot serve on ${d.tunnelUrl}: ${ConnectError.from(e).rawMessage}`, Code.InvalidArgument);
        }
        const entry = { session: req.sessionUid, serving, connectionId: "" };
        current = entry;
        void serving.ended.then((end) => o.log({ level: end.failed ? "warn" : "info", msg: "serving ended", session: entry.session, reason: end.reason }));
        let timer: NodeJS.Timeout | undefined;
        try {
          entry.connectionId = await Promise.race([
            serving.connected,
            new Promise<never>((_, reject) => {
              timer = setTimeout(
                () => reject(new ConnectError(`the harness did not dial back within ${Math.round(readyMs / 1000)} s`, Code.Unavailable)),
                readyMs,
              );
            }),
          ]);
        } catch (e) {
          if (current === entry) current = undefined;
          await serving.close();
          throw e;
        } finally {
          clearTimeout(timer);
        }
        o.log({ level: "info", msg: "attached", session: req.sessionUid, connection: entry.connectionId, restored: req.restored });
        return { connectionId: entry.connectionId, keptConnection: false };
      }),
  };

  const server: RpcServer = await startRpcServer({ routes: (r) => r.service(ActorAgent, impl), log: o.log, port: o.port, host: o.host, token: o.token });
  return {
    url: server.url,
    port: server.port,
    get session() {
      return current?.session ?? "";
    },
    close: () =>
      server.close(async () => {
        await current?.serving.close();
      }),
  };
}
