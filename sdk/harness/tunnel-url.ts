/**
 * Where a harness dials (docs/tunnel.md "Connecting"): the host's base URL mapped to the WebSocket
 * endpoint, and the rule for harness names. Used by serve.ts and the CLI; tested in
 * test/node/sdk-harness/tunnel-url.test.ts.
 */
import { Code, ConnectError } from "@connectrpc/connect";

export const TUNNEL_PATH = "/harness/v1/connect";
export const TUNNEL_SUBPROTOCOL = "agentsessions.harness.v1";

/** A registry name (a DNS label): lowercase letters, digits and `-`, 1..63, not starting with `-`. */
const NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function isHarnessName(s: string): boolean {
  return NAME_RE.test(s);
}

/**
 * `http(s)://host[/prefix]` (or `ws(s)://…`) to `ws(s)://host[/prefix]/harness/v1/connect?name=…`.
 * A URL that already ends in the connect path keeps it. Anything else is INVALID_ARGUMENT.
 */
export function tunnelUrlFromBase(base: string, name: string): string {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    throw new ConnectError(`not a URL: ${JSON.stringify(base)}`, Code.InvalidArgument);
  }
  const scheme = { "http:": "ws:", "https:": "wss:", "ws:": "ws:", "wss:": "wss:" }[u.protocol];
  if (!scheme) throw new ConnectError(`the host URL must be http(s) or ws(s), got ${u.protocol}`, Code.InvalidArgument);
  if (!isHarnessName(name))
    throw new ConnectError(`bad harness name ${JSON.stringify(name)}: lowercase letters, digits and -, at most 63`, Code.InvalidArgument);
  u.protocol = scheme;
  const path = u.pathname.replace(/\/+$/, "");
  u.pathname = path.endsWith(TUNNEL_PATH) ? path : path + TUNNEL_PATH;
  u.search = "";
  u.hash = "";
  u.searchParams.set("name", name);
  return u.toString();
}
