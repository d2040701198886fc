/**
 * The tunnel's front door (docs/tunnel.md): `GET /harness/v1/connect?name=<harness>` upgrades to a
 * WebSocket owned by the HarnessTunnel object of this tenant and name. Every refusal happens here,
 * before the upgrade, as an HTTP error with a Connect JSON body.
 */
import { Code } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { tunnelStub, type Env } from "../objects/index.js";
import { isHarnessName } from "../proto/harness-name.js";
import { parseTenantId } from "../proto/ids.js";
import { TUNNEL_PATH, TUNNEL_SUBPROTOCOL } from "../proto/tunnel-endpoint.js";
import { BUILTIN_NAMES } from "../runtimes/builtin/index.js";
import { bearerOf, type Authenticator } from "./auth/index.js";
import type { Principal } from "./auth/principal.js";

export { TUNNEL_PATH };
const RESERVED = new Set(BUILTIN_NAMES);

export async function serveTunnel(req: Request, env: Env, auth: Authenticator): Promise<Response> {
  const url = new URL(req.url);
  const token = bearerOf(req);
  // A runtime's one-time token (`ot_<tenant>~<secret>`) names its tenant; anything else is a
  // credential the authenticator decides on, before anything about the request is checked.
  const oneTime = token?.startsWith("ot_") ? parseTenantId(token.slice(3).split("~")[0] ?? "") : undefined;
  const unknownToken = () => refuse(401, "unauthenticated", "this one-time token is unknown, used or expired: ask the runtime for a new incarnation");
  let principal: Principal | undefined;
  if (token?.startsWith("ot_")) {
    if (!oneTime) return unknownToken();
  } else {
    const who = await auth.authenticate(req);
    if (!who.ok) return refuse(who.code === Code.Internal ? 500 : who.code === Code.Unavailable ? 503 : 401, codeToString(who.code), who.message);
    if (!who.principal.roles.has("harness")) {
      return refuse(403, "permission_denied", `${who.principal.name} may not serve harnesses: it needs the harness role`);
    }
    principal = who.principal;
  }
  if (req.method !== "GET" || req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    return refuse(426, "failed_precondition", "the harness tunnel is a WebSocket: connect with Upgrade: websocket (see docs/tunnel.md)");
  }
  const protocols = (req.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
  if (!protocols.includes(TUNNEL_SUBPROTOCOL)) {
    return refuse(400, "invalid_argument", `ask for the WebSocket subprotocol ${TUNNEL_SUBPROTOCOL}`);
  }
  const name = url.searchParams.get("name") ?? "";
  if (!isHarnessName(name)) {
    return refuse(400, "invalid_argument", "name must be a harness name: lowercase letters, digits and '-', at most 63 characters");
  }
  if (RESERVED.has(name)) return refuse(403, "permission_denied", `${name} is a built-in harness name; serve yours under another name`);
  let tenant: string;
  let session = "";
  if (principal) tenant = principal.tenant;
  else {
    // This connection serves the one session the token was minted for.
    tenant = oneTime!;
    session = (await tunnelStub(env, tenant, name).consumeToken(token!)) ?? "";
    if (!session) return unknownToken();
  }
  const headers = new Headers(req.headers);
  for (const h of [...headers.keys()]) if (h.startsWith("x-agentsessions-")) headers.delete(h);
  headers.set("x-agentsessions-harness", name);
  headers.set("x-agentsessions-session", session);
  return tunnelStub(env, tenant, name).fetch(new Request(req.url, { method: "GET", headers }));
}

function refuse(status: number, code: string, message: string): Response {
  return Response.json({ code, message }, { status });
}
