/**
 * A Connect service on node:http (HTTP/1.1, unary, Connect protocol only): what the pod runtime,
 * the substrate bridge and the substrate actor agent each serve. It logs one line per RPC, refuses
 * bodies over 1 MiB before parsing them and unknown JSON fields, and, given a token, refuses every
 * request without it (UNAUTHENTICATED) before reading its body.
 * @internal Used by runtimes/pod/pod-server.ts and runtimes/substrate; tested through them in
 * test/node/pod/ and test/node/substrate/.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createConnectRouter, type ConnectRouter } from "@connectrpc/connect";
import { createBearerCheck } from "./bearer-token.js";
import { createNodeHandler } from "./node-handler.js";
import { rpcLog, type RuntimeLog } from "./runtime-log.js";

/** Runtime requests are small; a larger one is refused before it is parsed. */
const MAX_REQUEST_BYTES = 1024 * 1024;

export interface RpcServerOptions {
  /** Registers the service(s) on the router. */
  routes: (router: ConnectRouter) => void;
  log: RuntimeLog;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Required as `Authorization: Bearer <token>` on every request when set. A secret: never logged. */
  token?: string;
}

export interface RpcServer {
  /** e.g. http://127.0.0.1:9400 */
  url: string;
  port: number;
  /**
   * Stops accepting connections, runs `drain` (ending what the service runs) while requests in
   * flight finish, then closes what is left. Idempotent.
   */
  close(drain?: () => Promise<void>): Promise<void>;
}

export async function startRpcServer(o: RpcServerOptions): Promise<RpcServer> {
  const router = createConnectRouter({
    grpc: false,
    grpcWeb: false,
    interceptors: [rpcLog(o.log)],
    readMaxBytes: MAX_REQUEST_BYTES,
    jsonOptions: { ignoreUnknownFields: false },
  });
  o.routes(router);
  const http = createServer(createNodeHandler(router.handlers, { authorize: o.token === undefined ? undefined : createBearerCheck(o.token) }));
  http.listen(o.port ?? 0, o.host ?? "127.0.0.1");
  await once(http, "listening");
  const { address, port } = http.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    close: (drain) =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((r) => http.close(() => r()));
        http.closeIdleConnections();
        await drain?.();
        http.closeAllConnections();
        await stopped;
      })()),
  };
}
