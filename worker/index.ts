/**
 * The Worker entry: resolves the caller, routes RPCs to the Connect handlers and serves the
 * inspector UI. Exports the Durable Object classes wrangler binds.
 */
import type { Code } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { Env } from "../objects/index.js";
import { createAuthenticator, type Authenticator } from "./auth/index.js";
import { createLimitGuards, type LimitGuards } from "./limits.js";
import { createRpcHandlers, type RpcHandlers } from "./router.js";
import { discardBody, serveRpcRequest } from "./rpc-entry.js";
import { serveBench } from "./bench.js";
import { serveWithCors } from "./cors.js";
import { serveUi } from "./ui.js";
import { serveTunnel, TUNNEL_PATH } from "./tunnel-route.js";
import { configureLogLevel, writeLogLine } from "../objects/log-line.js";

export { SessionObject, Directory, BenchObject, HarnessTunnel, TenantLimiter } from "../objects/index.js";

let handlers: RpcHandlers | undefined;
let auth: Authenticator | undefined;
let guards: LimitGuards | undefined;

const routes = {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(req.url);
    auth ??= createAuthenticator(env);
    guards ??= loggedGuards(env);
    handlers ??= createRpcHandlers(env, guards);
    // Public: the health check and the inspector's page (it asks for a token before any call).
    if (url.pathname === "/healthz") return new Response("ok\n");
    const ui = req.method === "GET" ? serveUi(url.pathname) : undefined;
    if (ui) return ui;
    const handler = handlers.get(url.pathname);
    if (handler) return serveRpcRequest(env, handler, req, auth, guards.limits, guards, (p) => ctx.waitUntil(p));
    if (url.pathname === TUNNEL_PATH) return serveTunnel(req, env, auth);
    // Anything else answers an unauthenticated caller the same way, so no route is revealed to it.
    const who = await auth.authenticate(req);
    if (!who.ok) {
      await discardBody(req, guards.limits.maxRequestBytes);
      return unauthenticated(who);
    }
    if (url.pathname.startsWith("/_bench/") && env.BENCH === "1" && auth.mode === "none") return serveBench(req, env, entry, ctx);
    await discardBody(req, guards.limits.maxRequestBytes);
    return Response.json(
      { code: "not_found", message: `no route for ${req.method} ${url.pathname}; RPCs live at /agentsessions.v1.Sessions/<Method>` },
      { status: 404 },
    );
  },
};

// CORS around every route; preflights are answered first, before authentication (worker/cors.ts).
function entry(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  return serveWithCors(env.CORS_ALLOWED_ORIGINS, req, () => routes.fetch(req, env, ctx));
}

export default { fetch: entry } satisfies ExportedHandler<Env>;

function unauthenticated(who: { code: Code; message: string }): Response {
  return Response.json({ code: codeToString(who.code), message: who.message }, { status: codeToHttpStatus(who.code) });
}

/** LOG_LEVEL and the limits, with one warning line per isolate for a variable that was set to something unusable. */
function loggedGuards(env: Env): LimitGuards {
  configureLogLevel(env);
  const g = createLimitGuards(env);
  const l = g.limits;
  if (l.ignored.length > 0) {
    const detail = "not a positive whole number (0 allowed for MAX_CONCURRENT_EXECS and RATE_LIMIT_PER_SECOND): the default applies; fix the variable";
    writeLogLine({ level: "warn", msg: "config", ignored: l.ignored, detail });
  }
  return g;
}
