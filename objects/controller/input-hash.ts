/**
 * ModelCall.input_hash (docs/contract.md §7.7), kept incrementally across the calls of a session: a
 * conversation grows by a few messages a turn, and hashing all of it again makes every turn cost
 * what the whole history costs (issue 12). The canonical text of a call begins with its messages
 * (`{"messages":[…` sorts before every other key), so the SHA-256 state after the previous call's
 * messages is kept and continued when the next call starts with the same messages (the same
 * objects, or messages with the same canonical text); each message's text is computed once. A
 * harness that grows one array and seals its past (runtimes/harness-spi.ts `sealMessages`, as the
 * built-in chat does) is compared past the seal only, so a call costs its new messages.
 * Anything else is hashed from the start. Always equal to modelInputHash (proto/canon.ts), which
 * stays the definition: test/node/controller/input-hash.test.ts.
 */
import { type Message, type ModelCall, ModelCallSchema, MessageSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { modelInputHash, updateText } from "../../proto/canon.js";
import { hexOf } from "../../proto/bytes.js";
import { type Sha256State, sha256State } from "../../proto/sha256.js";
import { canonicalJsonOf } from "../../proto/jcs-writer.js";
import { sealedLength } from "../../runtimes/harness-spi.js";

/** The last call hashed: its messages (those before `sealed` by reference, the rest copied) and the SHA-256 state after them. */
interface Last {
  array: readonly Message[];
  sealed: number;
  tail: Message[];
  length: number;
  state: Sha256State;
}

export class InputHashCache {
  private readonly _text = new WeakMap<Message, string>();
  private _last: Last | undefined;

  hash(call: ModelCall): string {
    const messages = call.messages;
    if (messages.length === 0) return modelInputHash(call);
    // The rest of the call's canonical text: every other field, in key order after "messages".
    const rest = canonicalJsonOf(ModelCallSchema, { ...call, messages: [], id: "", inputHash: "" });
    const sealed = sealedLength(messages);
    let state: Sha256State;
    let from = 0;
    const last = this._last;
    if (last && last.length <= messages.length && this._continues(last, messages, sealed)) {
      // Continued in place: forgotten until it is whole again.
      state = last.state;
      from = last.length;
    } else {
      state = updateText(sha256State(), '{"messages":[');
    }
    this._last = undefined;
    for (let i = from; i < messages.length; i++) updateText(state, (i > 0 ? "," : "") + this._canonical(messages[i]!));
    // What the next call is compared with: a sealed prefix by reference (it cannot change), the
    // rest as copied now.
    this._last = { array: messages, sealed, tail: messages.slice(sealed), length: messages.length, state };
    return hexOf(updateText(state.copy(), rest === "{}" ? "]}" : "]," + rest.slice(1)).digest());
  }

  /**
   * Whether `messages` starts with the messages the last call hashed. The same array, sealed at
   * least as far as then, is compared past that seal only: a conversation's length of identity
   * checks would make every call cost the whole history (issue 12).
   */
  private _continues(last: Last, messages: readonly Message[], sealed: number): boolean {
    const from = messages === last.array && sealed >= last.sealed ? last.sealed : 0;
    for (let i = from; i < last.length; i++) {
      const a = i < last.sealed ? last.array[i]! : last.tail[i - last.sealed]!;
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
