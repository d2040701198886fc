/**
 * `serve`: runs a Harness for a session host over the tunnel (docs/tunnel.md). It dials, says Hello
 * with the harness's current descriptor, and serves Describe calls and streams until `close()`;
 * when the socket drops it reconnects with capped, jittered exponential backoff (a new connection
 * takes new streams; the host re-drives interrupted executions on Resume). An HTTP refusal (bad
 * token or name) or a refused Hello stops it: no retry can fix those.
 * Used by `agentctl harness serve` (cli/commands/harness.ts); tested in test/node/sdk-harness/.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Harness } from "../../runtimes/harness-spi.js";
import { createBackoff, type BackoffOptions } from "./backoff.js";
import { TunnelConnection, type ConnectionEnd } from "./connection.js";
import { descriptionOf } from "./errors.js";
import { tunnelUrlFromBase } from "./tunnel-url.js";

export interface ServeOptions {
  /** The host's base URL, e.g. http://127.0.0.1:8787 (ws(s):// and the full connect URL work too). */
  url: string;
  /** A harness token of the deployment, or a runtime's one-time token. Sent only as a header. */
  token?: string;
  /** The registry name sessions select (docs/tunnel.md): lowercase letters, digits and `-`. */
  name: string;
  harness: Harness;
  /** Streams this connection runs at once, asked of the host (0 or unset: no limit). */
  maxStreams?: number;
  /** Aborting it is `close()`. */
  signal?: AbortSignal;
  /** Connection state changes, for logs and UIs. Never carries the token. */
  onStatus?: (status: ServeStatus) => void;
  /** Reconnect delays (default 500 ms doubling to 30 s, jittered). */
  backoff?: BackoffOptions;
  /** WebSocket ping period in ms (default 30 000; 0: no pings). */
  pingIntervalMs?: number;
  /** How long `close()` lets open streams finish before closing the socket (default 10 000 ms). */
  drainMs?: number;
}

export type ServeStatus =
  | { state: "connecting"; attempt: number }
  | { state: "connected"; connectionId: string /** Set for a runtime's one-time token: the only session served. */; session: string }
  | { state: "disconnected"; reason: string; retryInMs: number }
  | { state: "closed" }
  | { state: "failed"; error: ConnectError };

export interface Serving {
  /** Resolves at the first Welcome; rejects if serving stops before one (close() or a refusal). */
  connected: Promise<void>;
  /** Resolves once serving stopped after close(); rejects with the refusal that stopped it. */
  stopped: Promise<void>;
  /** The current connection's id, "" while not connected. */
  readonly connectionId: string;
  /** Goodbye, let open streams finish (up to drainMs), close the socket and stop reconnecting. */
  close(): Promise<void>;
}

export function serve(o: ServeOptions): Serving {
  const url = tunnelUrlFromBase(o.url, o.name); // a bad URL or name throws here, synchronously
  const status = (s: ServeStatus) => o.onStatus?.(s);
  const wake = new AbortController();
  let current: TunnelConnection | undefined;
  let closing: Promise<void> | undefined;
  let stopping = false;

  const loop = async (): Promise<void> => {
    const backoff = createBackoff(o.backoff);
    for (let attempt = 1; !stopping; attempt++) {
      status({ state: "connecting", attempt });
      const end = await connectOnce();
      if (stopping) return;
      if (end.kind === "refused") throw end.error;
      if (end.welcomed) {
        backoff.reset();
        attempt = 0;
      }
      const delay = backoff.next();
      status({ state: "disconnected", reason: end.reason, retryInMs: delay });
      await sleep(delay, wake.signal);
    }
  };

  const connectOnce = async (): Promise<ConnectionEnd> => {
    let descriptor;
    try {
      // Asked afresh per connection: Hello carries what Describe would answer now.
      descriptor = await o.harness.describe();
    } catch (e) {
      return { kind: "dropped", reason: `the harness's describe failed: ${descriptionOf(e)}`, welcomed: false };
    }
    if (stopping) return { kind: "dropped", reason: "closed", welcomed: false };
    const conn = new TunnelConnection(
      { url, token: o.token, name: o.name, harness: o.harness, maxStreams: o.maxStreams ?? 0, pingIntervalMs: o.pingIntervalMs ?? 30_000 },
      descriptor,
      (w) => {
        status({ state: "connected", connectionId: w.connectionId, session: w.session });
        resolveConnected();
      },
    );
    current = conn;
    try {
      return await conn.ended;
    } finally {
      current = undefined;
    }
  };

  let resolveConnected!: () => void;
  let rejectConnected!: (e: unknown) => void;
  const connected = new Promise<void>((res, rej) => ((resolveConnected = res), (rejectConnected = rej)));
  const stopped = loop().then(
    () => {
      status({ state: "closed" });
      rejectConnected(new ConnectError("serving stopped before the host welcomed the harness", Code.Canceled));
    },
    (e: unknown) => {
      const err = ConnectError.from(e);
      status({ state: "failed", error: err });
      rejectConnected(err);
      throw err;
    },
  );
  // Callers may watch only one of the two; an unwatched rejection must not crash the process.
  connected.catch(() => undefined);
  stopped.catch(() => undefined);

  const close = (): Promise<void> =>
    (closing ??= (async () => {
      stopping = true;
      wake.abort();
      o.signal?.removeEventListener("abort", onAbort);
      const c = current;
      if (c) {
        if (c.welcomed) {
          c.goodbye("the harness is shutting down");
          await c.drain(o.drainMs ?? 10_000);
        }
        await c.close();
      }
      await stopped.catch(() => undefined);
    })());
  const onAbort = () => void close();
  if (o.signal?.aborted) void close();
  else o.signal?.addEventListener("abort", onAbort, { once: true });

  return {
    connected,
    stopped,
    get connectionId() {
      return current?.connectionId ?? "";
    },
    close,
  };
}

/** A timer that keeps the process alive (a harness waiting to reconnect is still serving). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
