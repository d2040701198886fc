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
import { createHash } from "node:crypto";
import { toBinary, toJson } from "@bufbuild/protobuf";
import { EventSchema, type Event, ModelCallSchema, type ModelCall } from "./gen/agentsessions/v1/common_pb.js";
import { HarnessSpecSchema, type HarnessSpec } from "./gen/agentsessions/v1/harness_registry_pb.js";
import { CANONICAL_JSON_OPTIONS as JSON_OPTIONS, canonicalRecordString, jcs } from "./canonical-json.js";
import { canonicalJsonOf } from "./jcs-writer.js";

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

/**
 * The stored (and served) bytes of a normalized event. Normalization already dropped unknown
 * fields, so the default writer (measurably faster than one given options) writes none.
 */
export function eventToStoredBytes(event: Event): Uint8Array {
  return toBinary(EventSchema, event);
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

export function sha256Hex(s: string | Uint8Array): string {
  return createHash("sha256").update(s).digest("hex");
}
