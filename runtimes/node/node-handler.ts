/**
 * A node:http request handler for Connect's universal handlers: the part of connect-node's
 * `connectNodeAdapter` a Runtime service backend needs (unary Connect over HTTP/1.1), plus the
 * bearer-token check, made before the body is read, and `GET /healthz` for probes. It only moves bytes between
 * IncomingMessage/ServerResponse and the universal request and response (see connect-node's
 * `node-universal-handler.ts`). gRPC needs HTTP/2 trailers and is not served (the router is built
 * Connect-only).
 * @internal Used by rpc-server.ts; tested through the HTTP runtime client in test/node/pod/ and
 * test/node/substrate/.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";

export interface NodeHandlerOptions {
  /** When set, a request whose Authorization header it refuses is answered UNAUTHENTICATED (HTTP 401), unread. */
  authorize?: (authorization: string | undefined) => boolean;
}

export function createNodeHandler(handlers: readonly UniversalHandler[], o: NodeHandlerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const byPath = new Map(handlers.map((h) => [h.requestPath, h]));
  return (req, res) => {
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
    // Readiness and wakeup probes carry no token and learn nothing but that the server answers.
    if (req.method === "GET" && url.pathname === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      return;
    }
    if (o.authorize && !o.authorize(req.headers.authorization)) {
      const body = JSON.stringify({ code: "unauthenticated", message: "this runtime wants Authorization: Bearer <its token> (the host sends RUNTIME_TOKEN)" });
      // The body is not read: close the connection rather than drain an unauthenticated upload.
      res.writeHead(401, { "content-type": "application/json", connection: "close" }).end(body);
      return;
    }
    const handler = byPath.get(url.pathname);
    if (!handler) {
      const body = JSON.stringify({ code: "unimplemented", message: `no RPC at ${url.pathname}` });
      res.writeHead(404, { "content-type": "application/json" }).end(body);
      return;
    }
    void serve(handler, url, req, res).catch((e: unknown) => {
      // The universal handler answers every RPC error itself; this is a broken socket or a bug.
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ code: "internal", message: "internal error" }));
      else res.destroy(e instanceof Error ? e : undefined);
    });
  };
}

async function serve(handler: UniversalHandler, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const abort = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) abort.abort();
  });
  const header = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (Array.isArray(v)) for (const one of v) header.append(k, one);
    else if (v !== undefined) header.set(k, v);
  }
  const ureq: UniversalServerRequest = {
    httpVersion: req.httpVersion,
    url: url.toString(),
    method: req.method ?? "GET",
    header,
    body: req as AsyncIterable<Uint8Array>,
    signal: abort.signal,
  };
  const ures = await handler(ureq);
  const out: Record<string, string> = {};
  ures.header?.forEach((v, k) => (out[k] = v));
  res.writeHead(ures.status, out);
  if (ures.body) {
    for await (const chunk of ures.body) {
      if (!res.write(chunk)) await new Promise((r) => res.once("drain", r));
    }
  }
  res.end();
}
