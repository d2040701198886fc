/**
 * What an incarnation process (incarnation.ts) tells the pod over the IPC channel, and the
 * environment it is started with. The dialback travels in the environment, never in argv (argv is
 * world-readable in /proc and `ps`), and never in these messages or a log line.
 * @internal Shared by incarnation.ts and harness-process.ts.
 */

/** The host's tunnel URL (docs/tunnel.md "Runtimes"). */
export const ENV_TUNNEL_URL = "AGENTSESSIONS_TUNNEL_URL";
/** The one-time token for that connection. A secret. */
export const ENV_TUNNEL_TOKEN = "AGENTSESSIONS_TUNNEL_TOKEN";
/** The session the incarnation serves, for the harness's own logs. */
export const ENV_SESSION = "AGENTSESSIONS_SESSION";

export type ChildMessage =
  /** The host welcomed the harness: it serves the session from now on. */
  | { kind: "connected"; connectionId: string }
  /** Serving stopped for good (a refusal, or the connection ended); the process exits next. */
  | { kind: "ended"; reason: string; code: string };

export function isChildMessage(v: unknown): v is ChildMessage {
  const m = v as Partial<ChildMessage> | null;
  return typeof m === "object" && m !== null && (m.kind === "connected" || m.kind === "ended");
}
