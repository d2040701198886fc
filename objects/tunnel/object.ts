/**
 * HarnessTunnel: one Durable Object per tenant and harness name, holding the WebSockets of the
 * harness processes that dialed in under that name (docs/tunnel.md).
 *
 * It relays: frames from a session's object to the connection running its stream, and events from
 * a connection to the session's object (SessionObject.deliver). Everything it needs after waking
 * from hibernation is in SQLite (objects/tunnel/tunnel-store.ts) or on the sockets; the only
 * in-memory state is the Describe calls awaiting an answer, which are always inside an RPC.
 */
import { DurableObject } from "cloudflare:workers";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { decodeBinary } from "../../proto/binary-reader.js";
import { encodeBinary } from "../../proto/binary-writer.js";
import { numberViolation } from "../../proto/numbers.js";
import { HarnessMessageSchema, HostMessageSchema } from "../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { EventSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ControllerFrameSchema, HarnessDescriptorSchema } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { sha256Hex } from "../../proto/canon.js";
import { randomHex } from "../../proto/ids.js";
import { TUNNEL_SUBPROTOCOL } from "../../proto/tunnel-endpoint.js";
import type { Env } from "../env.js";
import { sqlDbFromStorage } from "../storage/do-sql.js";
import { TunnelStore } from "./tunnel-store.js";
import { configureLogLevel, writeLogLine } from "../log-line.js";

const TOKEN_TTL_MS = 10 * 60_000;

type HostInit = NonNullable<MessageInitShape<typeof HostMessageSchema>["message"]>;

/** What a live Describe through the tunnel came to: a descriptor, the harness's error answer, or no answer. */
export type TunnelDescribed = { descriptor: Uint8Array } | { answered: string } | { error: string };

interface Attachment {
  conn: string;
  name: string;
  session: string;
  helloed: boolean;
}

export class HarnessTunnel extends DurableObject<Env> {
  private readonly _store: TunnelStore;
  private readonly _describes = new Map<string, (d: TunnelDescribed) => void>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    configureLogLevel(env);
    this._store = new TunnelStore(sqlDbFromStorage(ctx.storage));
  }

  /** The upgrade, already authenticated by the Worker (which names the harness and any dedicated session). */
  async fetch(req: Request): Promise<Response> {
    const name = req.headers.get("x-agentsessions-harness") ?? "";
    const session = req.headers.get("x-agentsessions-session") ?? "";
    const pair = new WebSocketPair();
    const conn = randomHex(8);
    this.ctx.acceptWebSocket(pair[1], [conn]);
    pair[1].serializeAttachment({ conn, name, session, helloed: false } satisfies Attachment);
    this._store.addConnection(conn, session, Date.now());
    return new Response(null, { status: 101, webSocket: pair[0], headers: { "Sec-WebSocket-Protocol": TUNNEL_SUBPROTOCOL } });
  }

  async webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    const a = ws.deserializeAttachment() as Attachment;
    if (typeof data === "string") return this._fatal(ws, a, "text messages are not part of the protocol: send binary protobuf");
    let msg;
    try {
      msg = decodeBinary(HarnessMessageSchema, new Uint8Array(data));
    } catch {
      return this._fatal(ws, a, "a message that does not decode as agentsessions.edge.v1.HarnessMessage");
    }
    const m = msg.message;
    if (!a.helloed) {
      if (m.case !== "hello") return this._fatal(ws, a, "the first message must be a Hello");
      if (m.value.name !== a.name) return this._fatal(ws, a, `Hello names ${JSON.stringify(m.value.name)} but the connection was opened for ${a.name}`);
      if (!m.value.descriptor) return this._fatal(ws, a, "Hello must carry the harness's descriptor");
      this._store.hello(a.conn, encodeBinary(HarnessDescriptorSchema, m.value.descriptor), m.value.maxStreams, Date.now());
      ws.serializeAttachment({ ...a, helloed: true } satisfies Attachment);
      this._send(ws, { case: "welcome", value: { connectionId: a.conn, session: a.session.split("/")[1] ?? "" } });
      return;
    }
    switch (m.case) {
      case "event": {
        const stream = this._store.stream(m.value.stream);
        if (!stream || stream.connection !== a.conn) {
          this._send(ws, { case: "error", value: { code: 5, message: "no such stream on this connection", stream: m.value.stream } });
          return;
        }
        // Numbers a rule does not allow (negative token counts, seqs) end the stream, refused with
        // the field and range, before the session reads the event (proto/numbers.ts).
        const bad = m.value.event && numberViolation(EventSchema, m.value.event);
        if (bad) {
          this._store.dropStream(m.value.stream);
          await this._session(stream.session)
            .deliver(m.value.stream, null, `sent an event the host refuses: ${bad}`)
            .catch(() => false);
          this._send(ws, { case: "close", value: { stream: m.value.stream, reason: `event refused: ${bad}` } });
          return;
        }
        // END finishes the stream. PARKED does not yet: the session checks the ack, then forgets the
        // stream (an accepted park) or closes it with the refusal (docs/tunnel.md; checklist §8.5 #28).
        if (m.value.event?.kind === 10) this._store.dropStream(m.value.stream);
        const ok = await this._session(stream.session).deliver(m.value.stream, m.value.event ? encodeBinary(EventSchema, m.value.event) : null, "");
        if (!ok) {
          this._store.dropStream(m.value.stream);
          this._send(ws, { case: "close", value: { stream: m.value.stream, reason: "no execution reads this stream any more" } });
        }
        return;
      }
      case "described": {
        const resolve = this._describes.get(m.value.id);
        this._describes.delete(m.value.id);
        const { descriptor, error } = m.value;
        resolve?.(
          descriptor && !error
            ? { descriptor: encodeBinary(HarnessDescriptorSchema, descriptor) }
            : { answered: error || "Described carries neither a descriptor nor an error" },
        );
        return;
      }
      case "goodbye":
        this._store.drain(a.conn);
        return;
      default:
        this._send(ws, { case: "error", value: { code: 3, message: "unexpected message after Hello" } });
    }
  }

  async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    // Answer the harness's close frame, so it need not wait out a timeout.
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "bye");
    } catch {
      // already closed
    }
    await this._lost(ws);
  }

  async webSocketError(ws: WebSocket): Promise<void> {
    await this._lost(ws);
  }

  /** Whether this name is served here: ever said Hello (known), and how many are connected now. */
  status(): { known: boolean; connected: number } {
    return { known: this._store.known(), connected: this._store.ready().length };
  }

  /**
   * A live Describe on a connection that may serve `uid`, bounded: the descriptor's bytes, the
   * harness's own error answer (`answered`), or why there was no answer (`error`: not connected,
   * disconnected, timed out).
   */
  async describe(uid: string, timeoutMs: number): Promise<TunnelDescribed> {
    const conn = this._pick(uid);
    if (!conn) return { error: "not connected" };
    const id = randomHex(6);
    const answer = new Promise<TunnelDescribed>((resolve) => {
      this._describes.set(id, resolve);
      setTimeout(() => {
        if (this._describes.delete(id)) resolve({ error: `did not answer Describe within ${timeoutMs} ms` });
      }, timeoutMs);
    });
    if (!this._sendTo(conn, { case: "describe", value: { id } })) return { error: "disconnected" };
    return answer;
  }

  /** Binds a new stream of `session` (`<tenant>/<uid>`) to a connection that may serve it. */
  open(stream: string, session: string, uid: string): { ok: true } | { ok: false; reason: string } {
    const conn = this._pick(uid);
    if (!conn) return { ok: false, reason: "no harness with this name is connected" };
    this._store.addStream(stream, conn, session);
    return { ok: true };
  }

  /** Sends one ControllerFrame (its bytes) of a stream; false when the stream or its socket is gone. */
  send(stream: string, frame: Uint8Array): boolean {
    const s = this._store.stream(stream);
    if (!s) return false;
    const msg = create(HostMessageSchema, { message: { case: "frame", value: { stream, frame: decodeBinary(ControllerFrameSchema, frame) } } });
    return this._sendRaw(s.connection, encodeBinary(HostMessageSchema, msg));
  }

  /** Forgets a stream the harness has finished (an accepted park), without telling it. */
  forget(stream: string): void {
    this._store.dropStream(stream);
  }

  /** Tells the harness to stop a stream (StreamClose) and forgets it. */
  close(stream: string, reason: string): void {
    const s = this._store.stream(stream);
    if (!s) return;
    this._store.dropStream(stream);
    this._sendTo(s.connection, { case: "close", value: { stream, reason } });
  }

  /** A one-time token for the incarnation a runtime starts for `session` (`<tenant>/<uid>`). */
  mintToken(session: string): string {
    // The tenant rides in the token (`ot_<tenant>~<secret>`) so the front door finds this object.
    const token = `ot_${session.split("/")[0]}~${randomHex(24)}`;
    this._store.addToken(sha256Hex(token), session, Date.now() + TOKEN_TTL_MS);
    return token;
  }

  /** The session a one-time token was minted for; the token is spent either way. */
  consumeToken(token: string): string | undefined {
    return this._store.consumeToken(sha256Hex(token), Date.now());
  }

  /** A connection dedicated to `uid` first, else the least busy general one with room. */
  private _pick(uid: string): string | undefined {
    const rows = this._store.ready();
    const own = rows.find((r) => r.session !== "" && r.session.endsWith(`/${uid}`));
    if (own) return own.id;
    return rows.find((r) => r.session === "" && r.draining === 0 && (r.max_streams === 0 || r.streams < r.max_streams))?.id;
  }

  private async _lost(ws: WebSocket): Promise<void> {
    const a = ws.deserializeAttachment() as Attachment | null;
    if (!a) return;
    for (const s of this._store.dropConnection(a.conn)) {
      await this._session(s.session)
        .deliver(s.id, null, "disconnected mid-turn")
        .catch(() => false);
    }
  }

  private _fatal(ws: WebSocket, a: Attachment, message: string): void {
    this._send(ws, { case: "error", value: { code: 3, message } });
    ws.close(1008, message.slice(0, 120));
    void this._lost(ws);
    writeLogLine({ level: "info", msg: "tunnel protocol error", harness: a.name, connection: a.conn });
  }

  private _session(name: string) {
    return this.env.SESSIONS.get(this.env.SESSIONS.idFromName(name));
  }

  private _send(ws: WebSocket, m: HostInit): void {
    try {
      ws.send(encodeBinary(HostMessageSchema, create(HostMessageSchema, { message: m })));
    } catch {
      // the socket is closing; webSocketClose cleans up
    }
  }

  private _sendTo(conn: string, m: HostInit): boolean {
    return this._sendRaw(conn, encodeBinary(HostMessageSchema, create(HostMessageSchema, { message: m })));
  }

  private _sendRaw(conn: string, bytes: Uint8Array): boolean {
    const ws = this.ctx.getWebSockets(conn)[0];
    if (!ws) return false;
    try {
      ws.send(bytes);
      return true;
    } catch {
      return false;
    }
  }
}
