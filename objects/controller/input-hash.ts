/**
 * ModelCall.input_hash (docs/contract.md §7.7), kept incrementally across the calls of a session: a
 * conversation grows by a few messages a turn, and hashing all of it again makes every turn cost
 * what the whole history costs (issue 12). The canonical text of a call begins with its messages
 * (`{"messages":[…` sorts before every other key), so the SHA-256 state after the previous call's
 * messages is kept and continued when the next call starts with the same messages (the same
 * objects, or messages with the same canonical text); each message's text is computed once.
 * Anything else is hashed from the start. Always equal to modelInputHash (proto/canon.ts), which
 * stays the definition: test/node/controller/input-hash.test.ts.
 */
import { createHash, type Hash } from "node:crypto";
import { type Message, type ModelCall, ModelCallSchema, MessageSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { modelInputHash } from "../../proto/canon.js";
import { canonicalJsonOf } from "../../proto/jcs-writer.js";

export class InputHashCache {
  private readonly _text = new WeakMap<Message, string>();
  private _last: { messages: Message[]; state: Hash } | undefined;

  hash(call: ModelCall): string {
    const messages = call.messages;
    if (messages.length === 0) return modelInputHash(call);
    // The rest of the call's canonical text: every other field, in key order after "messages".
    const rest = canonicalJsonOf(ModelCallSchema, { ...call, messages: [], id: "", inputHash: "" });
    let state: Hash;
    let from = 0;
    const last = this._last;
    if (last && last.messages.length <= messages.length && this._samePrefix(last.messages, messages)) {
      // Continued in place (one copy per call, for the digest): forgotten until it is whole again.
      state = last.state;
      from = last.messages.length;
    } else {
      state = createHash("sha256").update('{"messages":[');
    }
    this._last = undefined;
    for (let i = from; i < messages.length; i++) state.update((i > 0 ? "," : "") + this._canonical(messages[i]!));
    this._last = { messages: messages.slice(), state };
    return state
      .copy()
      .update(rest === "{}" ? "]}" : "]," + rest.slice(1))
      .digest("hex");
  }

  private _samePrefix(prefix: readonly Message[], messages: readonly Message[]): boolean {
    for (let i = 0; i < prefix.length; i++) {
      const a = prefix[i]!;
      const b = messages[i]!;
      if (a !== b && this._canonical(a) !== this._canonical(b)) return false;
    }
    return true;
  }

  private _canonical(m: Message): string {
    let t = this._text.get(m);
    if (t === undefined) {
      t = canonicalJsonOf(MessageSchema, m);
      this._text.set(m, t);
    }
    return t;
  }
}
