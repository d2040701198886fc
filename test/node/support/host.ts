/**
 * One way for integration tests to get a real host: `startHost({ vars })` starts a `wrangler dev`
 * (scripts/dev-server.ts) and returns a client for it with the helpers most tests want. `stop()`
 * stops the server and removes its storage; `kill()` and `restart()` are the crash a fault test
 * needs (same port and storage).
 */
import { EventKind, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { type DevServer, type DevServerOptions, startDevServer } from "../../../scripts/dev-server.js";
import { SessionsClient } from "../../../sdk/client.js";

export interface Host {
  url: string;
  server: DevServer;
  client: SessionsClient;
  /** Every committed record of a session, through Replay. */
  records(uid: string): Promise<LogRecord[]>;
  /** The kinds of a session's records, without the EVENT_ prefix. */
  kinds(uid: string): Promise<string[]>;
  /** SIGKILL of the whole server (wrangler and workerd). */
  kill(): Promise<void>;
  /** Starts again on the same port and storage (stopping it first if it still runs). */
  restart(): Promise<void>;
  /** Stops the server and removes its storage. */
  stop(): Promise<void>;
}

export async function startHost(opts: DevServerOptions & { token?: string } = {}): Promise<Host> {
  const server = await startDevServer(opts);
  const client = new SessionsClient({ server: server.url, token: opts.token });
  const records = async (uid: string) => {
    const out: LogRecord[] = [];
    for await (const r of client.replay(uid)) out.push(r);
    return out;
  };
  return {
    url: server.url,
    server,
    client,
    records,
    kinds: async (uid) => kindsOf(await records(uid)),
    kill: () => server.kill(),
    restart: () => server.restart(),
    stop: () => server.dispose(),
  };
}

/** Record kinds without the EVENT_ prefix: ["EXECUTION_START", "INPUT", …]. */
export function kindsOf(records: readonly LogRecord[]): string[] {
  return records.map((r) => (EventKind[r.event?.kind ?? 0] ?? String(r.event?.kind)).replace(/^EVENT_/, ""));
}
