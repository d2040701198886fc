/**
 * An in-process fake of the host side of the harness tunnel (docs/tunnel.md), for the SDK's tests:
 * an HTTP server that upgrades GET /harness/v1/connect with the subprotocol (or refuses with a
 * Connect JSON error, as the real host does), and per connection a small script API: welcome,
 * describe, start a stream, answer model and tool calls, park, close a stream, drop the socket.
 * Everything the harness sends is buffered; `take` waits for the first message that matches.
 */
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { WebSocketServer, type WebSocket } from "ws";
import { refuseUpgrade } from "../support/refuse-upgrade.js";
import type { Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import type { ControllerFrameSchema, StartSchema } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import {
  HarnessMessageSchema,
  HostMessageSchema,
  type Described,
  type HarnessMessage,
  type Hello,
} from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";

const SUBPROTOCOL = "agentsessions.harness.v1";
// How long to wait for a harness's next message. Generous: `agentctl harness serve` starts Node
// and tsx first, which takes seconds on a busy 2-core machine; a message that comes returns at once.
const WAIT_MS = 30_000;

export interface FakeHostOptions {
  /** Required bearer token; unset accepts any (as `npm start` does). */
  token?: string;
  /** Refuse every upgrade with this HTTP status and Connect error. */
  refuse?: { status: number; code: string; message: string };
  /** Send Welcome as soon as Hello arrives (default true). */
  autoWelcome?: boolean;
}

export interface FakeHost {
  url: string;
  /** Every upgrade request seen, refused or not. */
  requests: { url: string; headers: IncomingHttpHeaders }[];
  nextConnection(): Promise<FakeConnection>;
  close(): Promise<void>;
}

export async function startFakeHost(o: FakeHostOptions = {}): Promise<FakeHost> {
  const http = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (ps) => (ps.has(SUBPROTOCOL) ? SUBPROTOCOL : false) });
  const requests: FakeHost["requests"] = [];
  const ready: FakeConnection[] = [];
  const waiting: ((c: FakeConnection) => void)[] = [];
  let n = 0;
  http.on("upgrade", (req: IncomingMessage, socket, head) => {
    requests.push({ url: req.url ?? "", headers: req.headers });
    const refusal =
      o.refuse ??
      (o.token !== undefined && req.headers.authorization !== `Bearer ${o.token}`
        ? { status: 401, code: "unauthenticated", message: "bad or missing token" }
        : undefined);
    if (refusal) {
      refuseUpgrade(socket, refusal.status, refusal.code, refusal.message);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const c = new FakeConnection(ws, req, `conn-${++n}`, o.autoWelcome ?? true);
      const w = waiting.shift();
      if (w) w(c);
      else ready.push(c);
    });
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    nextConnection: () => {
      const c = ready.shift();
      return c ? Promise.resolve(c) : within(new Promise((r) => waiting.push(r)), "a connection");
    },
    async close() {
      for (const c of wss.clients) c.terminate();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    },
  };
}

export class FakeConnection {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly protocol: string;
  readonly closed: Promise<{ code: number }>;
  private readonly _inbox: HarnessMessage[] = [];
  private _wake: (() => void) | undefined;

  constructor(
    private readonly _ws: WebSocket,
    req: IncomingMessage,
    readonly id: string,
    autoWelcome: boolean,
  ) {
    this.url = req.url ?? "";
    this.headers = req.headers;
    this.protocol = _ws.protocol;
    this.closed = new Promise((r) => _ws.once("close", (code) => r({ code })));
    _ws.on("message", (data, isBinary) => {
      if (!isBinary) throw new Error("the harness sent a text message");
      const m = fromBinary(HarnessMessageSchema, new Uint8Array(data as Buffer));
      if (autoWelcome && m.message.case === "hello") this.send({ message: { case: "welcome", value: { connectionId: this.id } } });
      this._inbox.push(m);
      this._wake?.();
    });
  }

  send(init: MessageInitShape<typeof HostMessageSchema>): void {
    this._ws.send(toBinary(HostMessageSchema, create(HostMessageSchema, init)));
  }

  /** The first buffered message that `pick` maps to a value (removed from the buffer). */
  async take<T>(pick: (m: HarnessMessage) => T | undefined, what: string, ms = WAIT_MS): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this._inbox.findIndex((m) => pick(m) !== undefined);
      if (i >= 0) return pick(this._inbox.splice(i, 1)[0]!)!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this._wake = () => (clearTimeout(t), r());
      });
    }
  }

  hello(): Promise<Hello> {
    return this.take((m) => (m.message.case === "hello" ? m.message.value : undefined), "Hello");
  }

  welcome(session = ""): void {
    this.send({ message: { case: "welcome", value: { connectionId: this.id, session } } });
  }

  async describe(id: string): Promise<Described> {
    this.send({ message: { case: "describe", value: { id } } });
    return this.take((m) => (m.message.case === "described" && m.message.value.id === id ? m.message.value : undefined), `Described ${id}`);
  }

  /** Opens `stream` with a Start frame; the execution id defaults to `exec-<stream>`. */
  start(stream: string, start: StartInit = {}, session = "sess-000000000000000000000001", executionId = `exec-${stream}`): void {
    this.frame(stream, { session, executionId, frame: { case: "start", value: start } });
  }

  frame(stream: string, frame: MessageInitShape<typeof ControllerFrameSchema>): void {
    this.send({ message: { case: "frame", value: { stream, frame } } });
  }

  closeStream(stream: string, reason = "canceled"): void {
    this.send({ message: { case: "close", value: { stream, reason } } });
  }

  /** The next event the harness sent on `stream`. */
  event(stream: string, ms?: number): Promise<Event> {
    return this.take((m) => (m.message.case === "event" && m.message.value.stream === stream ? m.message.value.event : undefined), `an event on ${stream}`, ms);
  }

  /** Throws if the harness sends anything on `stream` within `ms`. */
  async silent(stream: string, ms = 300): Promise<void> {
    const ev = await this.event(stream, ms).catch(() => undefined);
    if (ev) throw new Error(`expected silence on ${stream}, got event kind ${ev.kind}`);
  }

  goodbye(): Promise<string> {
    return this.take((m) => (m.message.case === "goodbye" ? m.message.value.reason : undefined), "Goodbye");
  }

  /** Kills the socket without a close frame (a network cut). */
  drop(): void {
    this._ws.terminate();
  }
}

export type StartInit = MessageInitShape<typeof StartSchema>;

function within<T>(p: Promise<T>, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT_MS);
    p.then((v) => (clearTimeout(t), resolve(v)), reject);
  });
}
