/**
 * The canonical form and content hash of journal records (docs/contract.md §7).
 *
 * content_hash = lowercase hex SHA-256 of the RFC 8785 (JCS) serialization of
 * {"event": <proto3-JSON of the normalized Event, proto field names>, "prev_hash": "...", "seq": "<decimal>"}.
 *
 * Used by the journal (objects/journal), the CLI verifier (cli/) and tests. Everything here is
 * synchronous so an append can hash inside `transactionSync` (docs/platform.md, "Hashing inside an
 * append"). Tested by test/node/proto/canon.test.ts against the golden vectors of §7.4.
 *
 * The canonical string itself comes from canonical-json.ts, which has no crypto in it, so the
 * inspector UI hashes the very same string with WebCrypto (chain-check.ts).
 */
import * as nodeCrypto from "node:crypto";
import { type DescMessage, type MessageShape, toJson } from "@bufbuild/protobuf";
import { EventSchema, type Event, ModelCallSchema, type ModelCall } from "./gen/agentsessions/v1/common_pb.js";
import { HarnessSpecSchema, type HarnessSpec } from "./gen/agentsessions/v1/harness_registry_pb.js";
import { CANONICAL_JSON_OPTIONS as JSON_OPTIONS, canonicalRecordString, jcs } from "./canonical-json.js";
import { canonicalJsonOf } from "./jcs-writer.js";
import { encodeBinary, encodeBinaryNoting } from "./binary-writer.js";
import { decodeBinary } from "./binary-reader.js";
import { hexOf } from "./bytes.js";
import { SHA256_DIRECT, type Sha256State, sha256State } from "./sha256.js";

const { createHash } = nodeCrypto;

export { canonicalRecordString, eventToCanonicalJson } from "./canonical-json.js";

/** 64 lowercase hex characters, or "" for the genesis prev_hash. */
export type ContentHash = string & { readonly __brand: "ContentHash" };

const HASH_RE = /^[0-9a-f]{64}$/;

/** Parses a content hash; "" is accepted as the genesis link. */
export function parseContentHash(s: string): ContentHash {
  if (s !== "" && !HASH_RE.test(s)) throw new Error(`not a content hash: ${JSON.stringify(s.slice(0, 80))}`);
  return s as ContentHash;
}

export const GENESIS_HASH = "" as ContentHash;

/** content_hash of (prev_hash, seq, event); the event must already be in normal form. */
export function contentHash(event: Event, prevHash: string, seq: bigint): ContentHash {
  return sha256Hex(canonicalRecordString(event, prevHash, seq)) as ContentHash;
}

/** The content hash both ways: hex (the wire's form) and the 32 bytes a journal row stores. */
export function contentDigest(event: Event, prevHash: string, seq: bigint): { hash: ContentHash; bytes: Uint8Array } {
  const bytes = updateText(sha256State(), canonicalRecordString(event, prevHash, seq)).digest();
  return { hash: hexOf(bytes) as ContentHash, bytes };
}

/**
 * `h.update(text)` as UTF-8, written into a scratch buffer first: workerd's node:crypto converts a
 * string through a Buffer made for it, which costs more than the hashing of a short text.
 */
export function updateText<S extends Sha256State>(h: S, text: string): S {
  if (utf8Scratch.length < text.length * 3) utf8Scratch = new Uint8Array(text.length * 3);
  const n = UTF8.encodeInto(text, utf8Scratch).written;
  h.update(utf8Scratch.subarray(0, n));
  return h;
}

const UTF8 = new TextEncoder();
let utf8Scratch = new Uint8Array(16384);

/**
 * The stored (and served) bytes of a normalized event: toBinary's bytes, written by the encoder
 * compiled for the Event schema (proto/binary-writer.ts). Normalization already dropped unknown
 * fields, so there are none to write.
 */
export function eventToStoredBytes(event: Event): Uint8Array {
  return encodeBinary(EventSchema, event);
}

/**
 * The stored bytes of an event whose shape is normal (normalize.ts isNormalShape), and what the
 * encoder found on the way, sparing the append a walk of its own: unknown fields (the event is
 * not in normal form after all, and must be normalized and encoded again), and strings holding a
 * lone surrogate (the bytes hold U+FFFD in its place: what is journaled is what they decode to).
 */
export function storedForm(event: Event): { bytes: Uint8Array; unknown: boolean; illFormed: boolean } {
  return encodeBinaryNoting(EventSchema, event);
}

/**
 * A message as its encoding holds it: the message itself, unless a string in it holds a lone
 * surrogate (half of a UTF-16 pair: from a JSON escape, or a text cut between the halves), which
 * UTF-8 cannot hold. Then it is the message its bytes decode to, with U+FFFD in each one's place,
 * and map keys that became equal merged as any decoder merges them. Text from outside the host
 * (a model's answer, a tool's result) passes through this before it is journaled and handed to
 * the harness, so both see the same text, the one every reader of the journal will see.
 */
export function asStored<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): MessageShape<Desc> {
  const { bytes, illFormed } = encodeBinaryNoting(schema, message);
  return illFormed ? decodeBinary(schema, bytes) : message;
}

/**
 * spec_digest of a harness registration (docs/contract.md §7.6): "sha256:" + hex of the JCS of the
 * spec's proto3-JSON. Also returns the canonical string so callers can enforce the 4096-byte limit.
 */
export function specDigest(spec: HarnessSpec): { digest: string; canonical: string } {
  const canonical = jcs(toJson(HarnessSpecSchema, spec, JSON_OPTIONS));
  return { digest: "sha256:" + sha256Hex(canonical), canonical };
}

/**
 * ModelCall.input_hash (docs/contract.md §7.7, our definition): lowercase hex SHA-256 of the JCS of the
 * proto3-JSON (proto names) of the wire ModelCall with `id` and `input_hash` cleared. It covers
 * model, params, messages, tools and tool_choice. Part of the journal format: see docs/journal.md.
 */
export function modelInputHash(call: ModelCall): string {
  return sha256Hex(canonicalJsonOf(ModelCallSchema, { ...call, id: "", inputHash: "" }));
}

type OneShot = (algorithm: string, data: string | Uint8Array, encoding: "hex") => string;
/**
 * Node's one-shot `crypto.hash` (Node 20.12 and later, and workerd) where there is one: in Node it
 * is twice as fast on a record's few hundred bytes, which `agentctl verify` hashes per record. Not
 * in every type package's node:crypto (the Worker's lacks it), so it is looked up at run time.
 */
const oneShotHash = (nodeCrypto as { hash?: OneShot }).hash;

export function sha256Hex(s: string | Uint8Array): string {
  // workerd's one-shot hash makes a stream object per call (proto/sha256.ts); its handle does not.
  if (SHA256_DIRECT) {
    const h = sha256State();
    if (typeof s === "string") updateText(h, s);
    else h.update(s);
    return hexOf(h.digest());
  }
  return oneShotHash ? oneShotHash("sha256", s, "hex") : createHash("sha256").update(s).digest("hex");
}
