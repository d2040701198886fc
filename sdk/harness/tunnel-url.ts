/**
 * Where a harness dials (docs/tunnel.md "Connecting"): the host's base URL mapped to the WebSocket
 * endpoint, and the rule for harness names. Used by serve.ts and the CLI; tested in
 * test/node/sdk-harness/tunnel-url.test.ts.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { HARNESS_NAME_RULE, isHarnessName } from "../../proto/harness-name.js";
import { TUNNEL_PATH } from "../../proto/tunnel-endpoint.js";

// The host's own definitions (proto/): the SDK accepts exactly the names the host does.
export { isHarnessName } from "../../proto/harness-name.js";
export { TUNNEL_PATH, TUNNEL_SUBPROTOCOL } from "../../proto/tunnel-endpoint.js";

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
  if (!isHarnessName(name)) throw new ConnectError(`bad harness name ${JSON.stringify(name)}: ${HARNESS_NAME_RULE}`, Code.InvalidArgument);
  u.protocol = scheme;
  const path = u.pathname.replace(/\/+$/, "");
  u.pathname = path.endsWith(TUNNEL_PATH) ? path : path + TUNNEL_PATH;
  u.search = "";
  u.hash = "";
  u.searchParams.set("name", name);
  return u.toString();
}
