/**
 * Serving one session's harness with a runtime's dialback (docs/tunnel.md "Runtimes"): the SDK's
 * `serve` against the host's tunnel URL with the one-time token minted for this session. The token
 * works once, so once the host has welcomed the harness a lost connection cannot be re-established:
 * serving ends instead of reconnecting, and whoever placed the harness learns it (the pod reports
 * no incarnation; the substrate actor agent waits for the bridge's next Attach with a fresh token).
 * A connection attempt that never reached the host is retried with the same token by `serve`.
 * @internal Used by runtimes/pod/incarnation.ts and runtimes/substrate/agent; tested through them.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { Harness } from "../harness-spi.js";
import { serve, type BackoffOptions } from "../../sdk/harness/index.js";

export interface DialbackServeOptions {
  /** The token may be missing only for a host that accepts harnesses without one (local development). */
  dialback: { tunnelUrl: string; token?: string };
  harness: Harness;
  /** The harness name for the Hello: the tunnel URL's `name` parameter, else this. */
  fallbackName: string;
  /** How long open executions may finish once serving is asked to stop. */
  drainMs: number;
  backoff?: BackoffOptions;
}

export interface DialbackEnd {
  /** Why serving ended, for a log line or an error message. */
  reason: string;
  /** A Connect code string: "canceled" when asked to stop, "unavailable" when the connection was lost. */
  code: string;
  /** True when serving stopped on a refusal or a fault rather than a stop or a lost connection. */
  failed: boolean;
}

export interface DialbackServing {
  /** The host's connection id once it welcomed the harness; rejects if serving ends first. */
  connected: Promise<string>;
  /** Settles once serving has stopped, for whatever reason. Never rejects. */
  ended: Promise<DialbackEnd>;
  /** True between the Welcome and the end. */
  readonly live: boolean;
  /** Goodbye, a drain of up to drainMs, then the socket closes. Resolves once serving stopped. */
  close(): Promise<DialbackEnd>;
}

export function serveDialback(o: DialbackServeOptions): DialbackServing {
  const stop = new AbortController();
  let welcomed = false;
  let live = false;
  let lastDrop = "";
  let resolveConnected!: (id: string) => void;
  const connected = new Promise<string>((r) => (resolveConnected = r));
  const serving = serve({
    url: o.dialback.tunnelUrl,
    token: o.dialback.token,
    name: tunnelName(o.dialback.tunnelUrl, o.fallbackName),
    harness: o.harness,
    signal: stop.signal,
    drainMs: o.drainMs,
    backoff: o.backoff,
    onStatus: (s) => {
      if (s.state === "connected") {
        welcomed = live = true;
        resolveConnected(s.connectionId);
      } else if (s.state === "disconnected") {
        live = false;
        lastDrop = s.reason;
        // A spent one-time token would only be refused: end instead of reconnecting.
        if (welcomed) stop.abort();
      }
    },
  });
  const ended: Promise<DialbackEnd> = serving.stopped.then(
    () =>
      lastDrop
        ? { reason: `the connection to the host ended: ${lastDrop}`, code: "unavailable", failed: false }
        : { reason: "stopped", code: "canceled", failed: false },
    (e: unknown) => {
      const err = ConnectError.from(e);
      return { reason: err.rawMessage, code: codeToString(err.code), failed: true };
    },
  );
  void ended.then(() => (live = false));
  // Serving that ends before a Welcome rejects `connected` with why, in the code serve gave.
  const notConnected = ended.then((end) => {
    if (welcomed) return new Promise<string>(() => undefined);
    throw new ConnectError(
      `the harness could not dial back: ${end.reason}`,
      end.code === "unavailable" || end.code === "canceled" ? Code.Unavailable : Code.FailedPrecondition,
    );
  });
  const first = Promise.race([connected, notConnected]);
  first.catch(() => undefined);
  return {
    connected: first,
    ended,
    get live() {
      return live;
    },
    close: async () => {
      stop.abort();
      return ended;
    },
  };
}

/** The host names the connection in the tunnel URL (`?name=`); the Hello must carry the same. */
export function tunnelName(tunnelUrl: string, fallback: string): string {
  try {
    return new URL(tunnelUrl).searchParams.get("name") || fallback;
  } catch {
    return fallback;
  }
}
