/**
 * The canonical JSON of journal records (docs/journal.md "Content hash"): what is hashed, without
 * the hashing. RFC 8785 (JCS) over {"event": <proto3-JSON of the normalized Event, proto field
 * names>, "prev_hash": "...", "seq": "<decimal>"}.
 *
 * It imports no crypto, so the same rules run everywhere: canon.ts adds the synchronous SHA-256
 * the journal needs inside `transactionSync`, and chain-check.ts lets a caller bring an async one
 * (WebCrypto in the inspector UI). Tested in test/node/proto/canon.test.ts.
 */
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import canonicalize from "canonicalize";
import { EventSchema, type Event } from "./gen/agentsessions/v1/common_pb.js";
import { canonicalJsonOf } from "./jcs-writer.js";

/** proto3-JSON options pinned by the contract (docs/journal.md): proto names, enum names, unpopulated omitted. */
export const CANONICAL_JSON_OPTIONS = { useProtoFieldName: true } as const;

/** proto3-JSON of an already-normalized event, as it is hashed. */
export function eventToCanonicalJson(event: Event): JsonValue {
  return toJson(EventSchema, event, CANONICAL_JSON_OPTIONS);
}

/**
 * The exact UTF-8 string that is SHA-256'd for one record: the object's keys are already in JCS
 * order (event, prev_hash, seq), and the event's text comes from the schema-driven writer
 * (jcs-writer.ts), which gives what `jcs(eventToCanonicalJson(event))` gives, faster.
 */
export function canonicalRecordString(event: Event, prevHash: string, seq: bigint): string {
  return recordStringOf(canonicalJsonOf(EventSchema, event), prevHash, seq);
}

/** The same string around an event's canonical JSON text already written (jcs-binary.ts writes it from bytes). */
export function recordStringOf(eventJson: string, prevHash: string, seq: bigint): string {
  return `{"event":${eventJson},"prev_hash":${JSON.stringify(prevHash)},"seq":"${seq}"}`;
}

/** The same string through toJson and canonicalize: the reference the fast path is tested against. */
export function canonicalRecordStringReference(event: Event, prevHash: string, seq: bigint): string {
  return jcs({ event: eventToCanonicalJson(event), prev_hash: prevHash, seq: seq.toString() });
}

/** RFC 8785 serialization of a JSON value. */
export function jcs(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new Error("canonicalize returned nothing for a JSON value");
  return out;
}
