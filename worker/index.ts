/**
 * The Worker entry: resolves the caller, routes RPCs to the Connect handlers and serves the
 * inspector UI. Exports the Durable Object classes wrangler binds.
 */
import { createContextValues } from "@connectrpc/connect";
import { hostLimits, type HostLimits } from "../objects/config.js";
import type { Env } from "../objects/index.js";
import { randomHex, type TenantId } from "../proto/ids.js";
import { createAuthenticator, type Authenticator } from "./auth/index.js";
import { callerKey } from "./context.js";
import { refuseMalformed } from "./request-check.js";
import { logRpc } from "./request-log.js";
import { createRpcHandlers, serveRpc, type RpcHandlers } from "./router.js";
import { serveBench } from "./bench.js";
import { serveWithCors } from "./cors.js";
import { serveUi } from "./ui.js";
import { serveTunnel, TUNNEL_PATH } from "./tunnel-route.js";

export { SessionObject, Directory, BenchObject, HarnessTunnel, TenantLimiter } from "../objects/index.js";

let handlers: RpcHandlers | undefined;
let auth: Authenticator | undefined;
let limits: HostLimits | undefined;

const routes = {
  async fetch(req: Request, env: Env): Promise<Response> {
    const url = new URL(req.url);
    handlers ??= createRpcHandlers(env);
    auth ??= createAuthenticator(env);
    limits ??= loggedLimits(env);
    const handler = handlers.get(url.pathname);
    if (handler) {
      // Authenticated here; auth/authorize.ts refuses inside the router, in the caller's protocol.
      const who = await auth.authenticate(req);
      const values = createContextValues();
      values.set(
        callerKey,
        who.ok
          ? { tenant: who.principal.tenant, requestId: requestIdOf(req), principal: who.principal }
          : { tenant: "" as TenantId, requestId: requestIdOf(req), refusal: { code: who.code, message: who.message } },
      );
      const buffered = await withBufferedBody(req, limits.maxRequestBytes);
      if (buffered.body.length <= limits.maxRequestBytes) {
        const refused = refuseMalformed(handler.method, buffered.request, buffered.body);
        if (refused) {
          const caller = values.get(callerKey);
          logRpc({ requestId: caller.requestId, tenant: caller.tenant, session: "", operation: handler.method.name, code: refused.code, durationMs: 0 });
          return refused.response;
        }
      }
      return serveRpc(handler, buffered.request, values);
    }
    if (url.pathname === "/healthz") return new Response("ok\n");
    if (url.pathname === TUNNEL_PATH) return serveTunnel(req, env, auth);
    if (url.pathname.startsWith("/_bench/") && env.BENCH === "1" && auth.mode === "none") return serveBench(req, env);
    const ui = serveUi(url.pathname);
    if (ui) return ui;
    return Response.json(
      { code: "not_found", message: `no route for ${req.method} ${url.pathname}; RPCs live at /agentsessions.v1.Sessions/<Method>` },
      { status: 404 },
    );
  },
} satisfies ExportedHandler<Env>;

// CORS around every route; preflights are answered first, before authentication (worker/cors.ts).
export default {
  fetch: (req, env) => serveWithCors(env.CORS_ALLOWED_ORIGINS, req, () => routes.fetch(req, env)),
} satisfies ExportedHandler<Env>;

/**
 * The request with its body read up front, keeping a little over `max` bytes (the router's
 * readMaxBytes then refuses it as too large). Reading it all here means no refusal leaves a
 * request body half read, which breaks the connection it came on under `wrangler dev`.
 */
async function withBufferedBody(req: Request, max: number): Promise<{ request: Request; body: Uint8Array }> {
  if (!req.body) return { request: req, body: new Uint8Array(0) };
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    // Past the limit the rest is read and dropped: the connection stays usable for the next call.
    if (size > max) continue;
    chunks.push(value);
    size += value.byteLength;
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) body.set(c, (at += c.byteLength) - c.byteLength);
  const headers = new Headers(req.headers);
  headers.delete("content-length");
  return { request: new Request(req.url, { method: req.method, headers, body, signal: req.signal }), body };
}

/** The limits, with one warning line per isolate for a variable that was set to something unusable. */
function loggedLimits(env: Env): HostLimits {
  const l = hostLimits(env);
  if (l.ignored.length > 0) {
    const detail = "not a positive whole number (0 allowed for MAX_CONCURRENT_EXECS and RATE_LIMIT_PER_SECOND): the default applies; fix the variable";
    console.log(JSON.stringify({ level: "warn", msg: "config", ignored: l.ignored, detail }));
  }
  return l;
}

function requestIdOf(req: Request): string {
  const given = req.headers.get("x-request-id");
  return given && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : randomHex(8);
}
