/**
 * The Worker entry: resolves the caller, routes RPCs to the Connect handlers and serves the
 * inspector UI. Exports the Durable Object classes wrangler binds.
 */
import { createContextValues } from "@connectrpc/connect";
import type { Env } from "../objects/index.js";
import { DEFAULT_TENANT, randomHex } from "../proto/ids.js";
import { callerKey } from "./context.js";
import { createRpcHandlers, serveRpc, type RpcHandlers } from "./router.js";
import { serveBench } from "./bench.js";
import { serveUi } from "./ui.js";
import { serveTunnel, TUNNEL_PATH } from "./tunnel-route.js";

export { SessionObject, Directory, BenchObject, HarnessTunnel } from "../objects/index.js";

let handlers: RpcHandlers | undefined;

export default {
  async fetch(req: Request, env: Env): Promise<Response> {
    const url = new URL(req.url);
    handlers ??= createRpcHandlers(env);
    const handler = handlers.get(url.pathname);
    if (handler) {
      const values = createContextValues();
      values.set(callerKey, { tenant: DEFAULT_TENANT, requestId: requestIdOf(req) });
      return serveRpc(handler, req, values);
    }
    if (url.pathname === "/healthz") return new Response("ok\n");
    if (url.pathname === TUNNEL_PATH) return serveTunnel(req, env);
    if (url.pathname.startsWith("/_bench/") && env.BENCH === "1") return serveBench(req, env);
    const ui = serveUi(url.pathname);
    if (ui) return ui;
    return Response.json(
      { code: "not_found", message: `no route for ${req.method} ${url.pathname}; RPCs live at /agentsessions.v1.Sessions/<Method>` },
      { status: 404 },
    );
  },
} satisfies ExportedHandler<Env>;

function requestIdOf(req: Request): string {
  const given = req.headers.get("x-request-id");
  return given && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : randomHex(8);
}
