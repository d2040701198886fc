/**
 * A tiny fake of the host's harness tunnel (docs/tunnel.md) for the pod and substrate tests: a `ws`
 * server at /harness/v1/connect that records each upgrade's URL and Authorization header and the
 * harness's Hello, answers the Hello with a Welcome naming the session its one-time token was
 * minted for, and can refuse tokens (401) or drop connections. `dialback(name, uid)` mints a token
 * as the host would; with `oneTime`, a token works for one connection only, as the host's do.
 * `exec(uid)` runs one execution on the session's connection and returns its outputs.
 */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { WebSocketServer, type WebSocket } from "ws";
import { refuseUpgrade } from "../support/refuse-upgrade.js";
import { HarnessMessageSchema, HostMessageSchema, type HarnessMessage, type Hello } from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { EventKind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { textOf } from "../../../proto/messages.js";

const SUBPROTOCOL = "agentsessions.harness.v1";

export interface TunnelConnection {
  id: string;
  url: URL;
  authorization: string | undefined;
  /** The harness's Hello (undefined until it arrives). */
  hello: Hello | undefined;
  /** The session the token was minted for ("" for an unknown token). */
  session: string;
  ws: WebSocket;
  closed: boolean;
  /** Every message after the Hello. */
  inbox: HarnessMessage[];
}

export interface FakeTunnel {
  /** The connect URL base: `${url}/harness/v1/connect?name=…` */
  url: string;
  connections: TunnelConnection[];
  /** A tunnel URL and a fresh one-time token for `uid`, as the host hands a runtime. */
  dialback(name: string, uid: string): { tunnelUrl: string; token: string };
  /** Answer this token's upgrade with 401 (as the host does for a spent or unknown token). */
  refuse(token: string): void;
  /** Every token minted so far (to check none reaches a log). */
  tokens(): string[];
  /** The session's open, welcomed connection (the newest), if any. */
  live(uid: string): TunnelConnection | undefined;
  /**
   * Runs one execution on the session's live connection: a Start frame on a new stream, then the
   * OUTPUT texts until END. Throws if there is no live connection or the END is not COMPLETED.
   */
  exec(uid: string, ms?: number): Promise<string[]>;
  close(): Promise<void>;
}

export async function startFakeTunnel(o: { oneTime?: boolean } = {}): Promise<FakeTunnel> {
  const http = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (ps) => (ps.has(SUBPROTOCOL) ? SUBPROTOCOL : false) });
  const minted = new Map<string, string>();
  const refused = new Set<string>();
  const used = new Set<string>();
  const connections: TunnelConnection[] = [];
  let streams = 0;
  http.on("upgrade", (req: IncomingMessage, socket, head) => {
    const authorization = req.headers.authorization;
    const token = authorization?.startsWith("Bearer ") ? authorization.slice(7) : "";
    if (refused.has(token) || (o.oneTime && used.has(token))) {
      refuseUpgrade(socket, 401, "unauthenticated", "this one-time token is unknown, used or expired");
      return;
    }
    used.add(token);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const c: TunnelConnection = {
        id: `conn-${connections.length + 1}`,
        url: new URL(req.url ?? "/", "http://tunnel"),
        authorization,
        hello: undefined,
        session: minted.get(token) ?? "",
        ws,
        closed: false,
        inbox: [],
      };
      connections.push(c);
      ws.on("close", () => (c.closed = true));
      ws.on("message", (data, isBinary) => {
        if (!isBinary) return;
        const m = fromBinary(HarnessMessageSchema, new Uint8Array(data as Buffer));
        if (m.message.case !== "hello") return void c.inbox.push(m);
        c.hello = m.message.value;
        const welcome = create(HostMessageSchema, { message: { case: "welcome", value: { connectionId: c.id, session: c.session } } });
        ws.send(toBinary(HostMessageSchema, welcome));
      });
    });
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const live = (uid: string) => connections.filter((c) => c.session === `default/${uid}` && c.hello && !c.closed).at(-1);
  return {
    url,
    connections,
    dialback(name, uid) {
      const token = `ot_${randomBytes(12).toString("hex")}`;
      minted.set(token, `default/${uid}`);
      return { tunnelUrl: `${url}/harness/v1/connect?name=${name}`, token };
    },
    refuse: (token) => void refused.add(token),
    tokens: () => [...minted.keys()],
    live,
    async exec(uid, ms = 45_000) {
      const c = live(uid);
      if (!c) throw new Error(`session ${uid} has no live connection`);
      const stream = `s${++streams}`;
      const start = create(HostMessageSchema, {
        message: { case: "frame", value: { stream, frame: { session: uid, executionId: `exec-${stream}`, frame: { case: "start", value: {} } } } },
      });
      c.ws.send(toBinary(HostMessageSchema, start));
      const outputs: string[] = [];
      const deadline = Date.now() + ms;
      for (;;) {
        const i = c.inbox.findIndex((m) => m.message.case === "event" && m.message.value.stream === stream);
        if (i >= 0) {
          const m = c.inbox.splice(i, 1)[0]!;
          const ev = m.message.case === "event" ? m.message.value.event : undefined;
          if (ev?.kind === EventKind.EVENT_OUTPUT && ev.body.case === "message") outputs.push(textOf(ev.body.value));
          if (ev?.kind === EventKind.EVENT_END) {
            if (ev.body.case !== "end" || ev.body.value.state !== "COMPLETED")
              throw new Error(`execution ended ${ev.body.case === "end" ? ev.body.value.state : "oddly"}`);
            return outputs;
          }
          continue;
        }
        if (c.closed) throw new Error(`session ${uid}'s connection closed during the execution`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for session ${uid}'s execution`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async close() {
      for (const c of wss.clients) c.terminate();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    },
  };
}
