/**
 * The Tail service (our extension, proto/agentsessions/edge/v1/tail.proto; docs/follow.md): a
 * session's committed records from a seq, then each record as it commits and the running turn's
 * deltas. The session object writes every item as an enveloped binary TailResponse
 * (objects/session/followers.ts); binary callers get those bytes as they are, JSON callers the
 * decoded message. When the caller goes away the object's stream is cancelled, which unregisters
 * its follower. Tested against `wrangler dev` in test/node/integration/tail.test.ts.
 */
import { decodeBinary } from "../proto/binary-reader.js";
import { concatBytes } from "../proto/bytes.js";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { type Tail, TailResponseSchema } from "../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { sessionStub, type Env } from "../objects/index.js";
import { binaryPassthrough } from "../proto/passthrough.js";
import { callerOf, noteSession, wantsBinary } from "./context.js";
import { connectErrorFrom } from "./errors.js";
import { requireUid } from "./sessions-service.js";

export function createTailService(env: Env): ServiceImpl<typeof Tail> {
  return {
    async *tail(req, ctx) {
      const uid = requireUid(req.session, "session");
      noteSession(ctx, uid);
      const r = await sessionStub(env, callerOf(ctx).tenant, uid).tail(req.fromSeq, req.follow);
      if (!r.ok) throw connectErrorFrom(r);
      const binary = wantsBinary(ctx);
      const reader = r.value.getReader();
      // A caller that goes away while the object has nothing to send: the generator is parked in
      // read(), so its finally only runs once the next item (at the latest a heartbeat) arrives.
      // Where the runtime aborts the request's signal on disconnect, cancel at once instead.
      const cancel = () => void reader.cancel().catch(() => undefined);
      ctx.signal.addEventListener("abort", cancel, { once: true });
      const envelopes = new EnvelopeSplitter();
      let ended = false;
      try {
        for (;;) {
          let chunk;
          try {
            chunk = await reader.read();
          } catch {
            break;
          }
          if (chunk.done) break;
          for (const bytes of envelopes.push(chunk.value)) {
            yield binary ? binaryPassthrough(TailResponseSchema, bytes) : decodeBinary(TailResponseSchema, bytes);
            if (bytes[0] === 0x22) ended = true;
          }
        }
      } finally {
        // The caller left (or the stream ended): cancelling the object's stream drops its follower.
        ctx.signal.removeEventListener("abort", cancel);
        cancel();
      }
      // A stream the host ends on purpose says so (an `end` item); any other cut is a failure.
      if (!ended || !envelopes.drained) {
        throw new ConnectError("the follow stream was cut short: Tail again from the seq after the last record you received", Code.Unavailable);
      }
    },
  };
}

/** Splits a byte stream of envelopes (flag, 4-byte length, message) into messages, across chunk boundaries. */
class EnvelopeSplitter {
  private _buf = new Uint8Array(0);

  push(chunk: Uint8Array): Uint8Array[] {
    const joined = this._buf.length === 0 ? chunk : concatBytes([this._buf, chunk]);
    const out: Uint8Array[] = [];
    let at = 0;
    while (joined.length - at >= 5) {
      const len = new DataView(joined.buffer, joined.byteOffset + at + 1, 4).getUint32(0);
      if (joined.length - at - 5 < len) break;
      out.push(joined.subarray(at + 5, at + 5 + len));
      at += 5 + len;
    }
    this._buf = joined.slice(at);
    return out;
  }

  get drained(): boolean {
    return this._buf.length === 0;
  }
}
