/**
 * One WebSocket to the host (docs/tunnel.md): Hello, then Welcome, then DescribeCalls and any
 * number of interleaved streams until the socket closes. An HTTP refusal of the upgrade, or a
 * connection-level TunnelError before Welcome, ends it as "refused" (reconnecting cannot help);
 * anything else that ends it is "dropped" and serve.ts reconnects.
 * @internal Used by serve.ts; tested through serve() in test/node/sdk-harness/.
 */
import type { IncomingMessage } from "node:http";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import WebSocket from "ws";
import type { HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { HarnessMessageSchema, HostMessageSchema, type HostMessage, type StreamFrame, type Welcome } from "../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import type { Harness } from "../../runtimes/harness-spi.js";
import { descriptionOf } from "./errors.js";
import { TunnelStream } from "./stream.js";
import { TUNNEL_SUBPROTOCOL } from "../../proto/tunnel-endpoint.js";
import { SDK_AGENT } from "./version.js";
import "../../proto/text-encoding.js";

export interface ConnectionOptions {
  /** The ws(s) connect URL, name included (tunnelUrlFromBase). */
  url: string;
  token?: string;
  name: string;
  harness: Harness;
  maxStreams: number;
  /** WebSocket ping period; a ping unanswered by the next one drops the socket. 0: none. */
  pingIntervalMs: number;
}

export type ConnectionEnd = { kind: "refused"; error: ConnectError } | { kind: "dropped"; reason: string; welcomed: boolean };

/** How long the upgrade, and then the Welcome, may take before the attempt counts as dropped. */
const HANDSHAKE_TIMEOUT_MS = 30_000;
/** The host waits 10 s for a Described; answering later is pointless. */
const DESCRIBE_TIMEOUT_MS = 10_000;
/** After a close frame, how long the host has to answer before the socket is destroyed. */
const CLOSE_GRACE_MS = 2_000;
/** HTTP refusals that no retry can fix (docs/tunnel.md: bad name, token, permission; no tunnel). */
const TERMINAL_HTTP = new Set([400, 401, 403, 404]);

export class TunnelConnection {
  readonly ended: Promise<ConnectionEnd>;
  private readonly _ws: WebSocket;
  private readonly _streams = new Map<string, TunnelStream>();
  private _welcome: Welcome | undefined;
  private _leaving = false;
  private _refusal: ConnectError | undefined;
  private _dropReason: string | undefined;
  private readonly _timers = new Set<NodeJS.Timeout>();
  private _drained: (() => void)[] = [];

  constructor(
    private readonly _o: ConnectionOptions,
    descriptor: HarnessDescriptor,
    onWelcome: (w: Welcome) => void,
  ) {
    const headers: Record<string, string> = _o.token ? { Authorization: `Bearer ${_o.token}` } : {};
    this._ws = new WebSocket(_o.url, TUNNEL_SUBPROTOCOL, { headers, handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    const ws = this._ws;
    this.ended = new Promise((resolve) => {
      ws.on("close", (code, reason) => {
        for (const t of this._timers) clearTimeout(t);
        for (const s of [...this._streams.values()]) s.lose();
        this._streams.clear();
        for (const d of this._drained.splice(0)) d();
        if (this._refusal) return resolve({ kind: "refused", error: this._refusal });
        const why = this._dropReason ?? `the host closed the connection (${code}${reason.length ? ` ${reason.toString()}` : ""})`;
        resolve({ kind: "dropped", reason: why, welcomed: this._welcome !== undefined });
      });
    });
    ws.on("error", (e) => (this._dropReason ??= e.message));
    ws.on("unexpected-response", (_req, res) => void this._refused(res));
    ws.on("open", () => {
      this._send({ case: "hello", value: { name: _o.name, descriptor, maxStreams: _o.maxStreams, agent: SDK_AGENT } });
      this._after(HANDSHAKE_TIMEOUT_MS, () => {
        if (this._welcome) return;
        this._dropReason = "the host sent no Welcome in time";
        ws.terminate();
      });
      if (_o.pingIntervalMs > 0) this._heartbeat(_o.pingIntervalMs);
    });
    ws.on("message", (data, isBinary) => {
      // Text is a protocol error (docs/tunnel.md); so is a message that does not parse.
      let msg: HostMessage;
      try {
        if (!isBinary) throw new Error("text message");
        msg = fromBinary(HostMessageSchema, bytesOf(data));
      } catch {
        this._dropReason = "the host sent a message that is not a binary HostMessage";
        return ws.close(1002, "protocol error");
      }
      this._dispatch(msg, onWelcome);
    });
  }

  get connectionId(): string {
    return this._welcome?.connectionId ?? "";
  }

  /** The host accepted our Hello. */
  get welcomed(): boolean {
    return this._welcome !== undefined;
  }

  /** Says we are leaving (Goodbye): the host sends no new streams; open ones may finish. */
  goodbye(reason: string): void {
    this._leaving = true;
    this._send({ case: "goodbye", value: { reason } });
  }

  /** Resolves when no stream is open, or after `ms`. */
  drain(ms: number): Promise<void> {
    if (this._streams.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this._drained.push(resolve);
      this._after(ms, resolve);
    });
  }

  /** Closes the socket; streams still open are lost (the host leaves them interrupted). */
  close(): Promise<ConnectionEnd> {
    this._dropReason ??= "closed by the harness";
    this._ws.close(1000, "harness closing");
    this._after(CLOSE_GRACE_MS, () => this._ws.terminate());
    return this.ended;
  }

  private _dispatch(msg: HostMessage, onWelcome: (w: Welcome) => void): void {
    const m = msg.message;
    if (m.case === "error") {
      if (m.value.stream !== "") return this._streams.get(m.value.stream)?.closeByHost(m.value.message);
      // Fatal for the connection; the host closes it. Before Welcome it refused our Hello.
      const err = new ConnectError(m.value.message || "the host refused the connection", (m.value.code || Code.Unknown) as Code);
      if (!this._welcome) this._refusal = err;
      else this._dropReason = `the host reported an error: ${err.message}`;
      this._ws.close(1000);
      return;
    }
    if (m.case === "welcome") {
      if (this._welcome) return;
      this._welcome = m.value;
      return onWelcome(m.value);
    }
    if (!this._welcome) return; // nothing but Welcome or an error may come first
    if (m.case === "describe") return this._describe(m.value.id);
    if (m.case === "frame") return this._frame(m.value);
    if (m.case === "close") return this._streams.get(m.value.stream)?.closeByHost(m.value.reason);
  }

  private _describe(id: string): void {
    Promise.resolve()
      .then(() => this._o.harness.describe(AbortSignal.timeout(DESCRIBE_TIMEOUT_MS)))
      .then(
        (descriptor) => this._send({ case: "described", value: { id, descriptor } }),
        (e: unknown) => this._send({ case: "described", value: { id, error: descriptionOf(e) } }),
      );
  }

  private _frame(sf: StreamFrame): void {
    const frame = sf.frame;
    if (!frame) return;
    const open = this._streams.get(sf.stream);
    if (open) return open.onFrame(frame);
    // Not a Start: a late answer for a stream we already ended (or one the host closed). Ignored.
    if (frame.frame.case !== "start") return;
    const stream = new TunnelStream(sf.stream, {
      send: (event) => this._send({ case: "event", value: { stream: sf.stream, event } }),
      done: () => {
        this._streams.delete(sf.stream);
        if (this._streams.size === 0) for (const d of this._drained.splice(0)) d();
      },
    });
    this._streams.set(sf.stream, stream);
    if (this._leaving) return stream.refuse(frame, "the harness is shutting down (it sent Goodbye)");
    stream.begin(frame, frame.frame.value, this._o.harness);
  }

  private _send(message: MessageInitShape<typeof HarnessMessageSchema>["message"]): void {
    if (this._ws.readyState !== WebSocket.OPEN) return; // gone: the close handler loses every stream
    this._ws.send(toBinary(HarnessMessageSchema, create(HarnessMessageSchema, { message })));
  }

  /** The upgrade was answered with an HTTP error: a Connect JSON body says why (docs/tunnel.md). */
  private async _refused(res: IncomingMessage): Promise<void> {
    const status = res.statusCode ?? 0;
    let code: Code | undefined;
    let message = "";
    try {
      let body = "";
      for await (const chunk of res) if ((body += String(chunk)).length > 65_536) break;
      const j = JSON.parse(body) as { code?: unknown; message?: unknown };
      if (typeof j.code === "string") code = codeFromString(j.code);
      if (typeof j.message === "string") message = j.message;
    } catch {
      // not a Connect error body: the status alone says it
    }
    const err = new ConnectError(message || `the host answered HTTP ${status}`, code ?? codeOfHttp(status));
    if (TERMINAL_HTTP.has(status)) this._refusal = err;
    else this._dropReason = `the host answered HTTP ${status}${message ? `: ${message}` : ""}`;
    this._ws.terminate();
  }

  private _heartbeat(ms: number): void {
    let waiting = false;
    this._ws.on("pong", () => (waiting = false));
    const tick = () => {
      if (waiting) {
        this._dropReason = "the host stopped answering pings";
        return this._ws.terminate();
      }
      waiting = true;
      this._ws.ping();
      this._after(ms, tick);
    };
    this._after(ms, tick);
  }

  private _after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this._timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this._timers.add(t);
  }
}

function bytesOf(data: WebSocket.RawData): Uint8Array {
  if (Array.isArray(data)) return new Uint8Array(Buffer.concat(data));
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

function codeOfHttp(status: number): Code {
  if (status === 400) return Code.InvalidArgument;
  if (status === 401) return Code.Unauthenticated;
  if (status === 403) return Code.PermissionDenied;
  if (status === 404) return Code.NotFound;
  return Code.Unavailable;
}
