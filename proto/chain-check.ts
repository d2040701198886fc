/**
 * The chain rules in two steps, so the hash can be computed synchronously (the journal, inside
 * `transactionSync`) or asynchronously (WebCrypto in the inspector UI) over ONE set of rules:
 * `admit` checks a record's seq, its prev_hash link and its stored bytes and returns the canonical
 * string to hash (canonical-json.ts); `settle` compares the recomputed hash. docs/journal.md
 * describes the chain; verify.ts is the synchronous verifier built on this.
 *
 * No crypto is imported here. Tested in test/node/proto/chain-check.test.ts.
 */
import { decodeBinary } from "./binary-reader.js";
import { hexOf } from "./bytes.js";
import { encodeBinary } from "./binary-writer.js";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { EventSchema, LogRecordSchema, type Event } from "./gen/agentsessions/v1/common_pb.js";
import { canonicalRecordString, recordStringOf } from "./canonical-json.js";
import { canonicalJsonOfBinary } from "./jcs-binary.js";

export interface ChainRecord {
  seq: bigint;
  prevHash: string;
  hash: string;
  /** The stored event: its bytes, or the decoded message (as served by Replay). */
  event: Uint8Array | Event;
}

/** A record as a host serves it: a LogRecord with its event still encoded. */
export interface ServedRecord {
  seq: bigint;
  prevHash: string;
  hash: string;
  event: Uint8Array;
}

/**
 * A LogRecord's encoding taken apart without decoding its event (a view into `encoded`). A record
 * in any other form than the plain one (a field twice, a field it does not know) is decoded, and
 * its event encoded again: the content is what is hashed. A record served without an event has
 * the empty event's encoding, so it is hashed as that. Throws when the record's own fields do not
 * decode; an event that does not is admitServed's failure at that record's seq.
 */
export function servedRecordOf(encoded: Uint8Array): ServedRecord {
  const r = new BinaryReader(encoded);
  const out: ServedRecord = { seq: 0n, prevHash: "", hash: "", event: NO_BYTES };
  let seen = 0;
  while (r.pos < encoded.length) {
    const [no, wire] = r.tag();
    const bit = 1 << no;
    if (no > 5 || seen & bit || wire !== (no === 1 || no === 4 ? WireType.Varint : WireType.LengthDelimited)) return decodedRecordOf(encoded);
    seen |= bit;
    if (no === 1) out.seq = BigInt(r.int64());
    else if (no === 2) out.prevHash = r.string(true);
    else if (no === 3) out.hash = r.string(true);
    else if (no === 4) r.int64();
    else out.event = r.bytes();
  }
  if (r.pos !== encoded.length) return decodedRecordOf(encoded);
  return out;
}

const NO_BYTES = new Uint8Array(0);

function decodedRecordOf(encoded: Uint8Array): ServedRecord {
  const rec = decodeBinary(LogRecordSchema, encoded);
  return { seq: rec.seq, prevHash: rec.prevHash, hash: rec.contentHash, event: rec.event ? encodeBinary(EventSchema, rec.event) : NO_BYTES };
}

export interface ChainReport {
  ok: boolean;
  records: bigint;
  /** First seq that fails a check; 0n when the chain is intact. */
  firstBadSeq: bigint;
  /** Why `firstBadSeq` failed; "" when ok. */
  reason: string;
  /** content_hash of the last record checked. */
  headHash: string;
}

export class ChainCheck {
  private _expectedSeq = 1n;
  private _prevHash = "";
  private _count = 0n;
  private _bad: { seq: bigint; reason: string } | undefined;

  /**
   * Checks everything about `r` but its hash and returns the string whose SHA-256 must equal
   * `r.hash`; undefined when `r` failed a check, or an earlier record did (later records are
   * counted but not checked). Call `settle` with the recomputed hash before the next `admit`.
   */
  admit(r: ChainRecord): string | undefined {
    if (!this._links(r)) return undefined;
    let event: Event;
    try {
      event = r.event instanceof Uint8Array ? decodeBinary(EventSchema, r.event) : r.event;
    } catch {
      return this._fail(r, "stored event does not decode as agentsessions.v1.Event");
    }
    // The hash covers the decoded content, and a lenient decoder reads some altered encodings as
    // the same content. Stored bytes are always the deterministic encoding of the normalized
    // event, so anything else is an edit even when the content survived it.
    if (r.event instanceof Uint8Array && !sameBytes(encodeBinary(EventSchema, event), r.event)) {
      return this._fail(r, "stored event bytes are not the encoding the journal wrote");
    }
    return this._canonical(r, event);
  }

  /**
   * `admit` for a record as a host serves it (Replay's LogRecord, taken apart by servedRecordOf):
   * its event is hashed from the content it encodes, as a decoded event is, and read straight
   * from the bytes where jcs-binary.ts can; unlike stored bytes, they need not be the journal's
   * exact encoding.
   */
  admitServed(r: ServedRecord): string | undefined {
    if (!this._links(r)) return undefined;
    const text = canonicalJsonOfBinary(EventSchema, r.event);
    if (text !== undefined) return recordStringOf(text, r.prevHash, r.seq);
    let event: Event;
    try {
      event = decodeBinary(EventSchema, r.event);
    } catch {
      return this._fail(r, "served event does not decode as agentsessions.v1.Event");
    }
    return this._canonical(r, event);
  }

  /** Compares the hash recomputed from `admit`'s string with the one `r` carries. */
  settle(r: { seq: bigint; hash: string }, recomputed: string): void {
    if (this._bad) return;
    if (recomputed !== r.hash) {
      this._fail(r, "content_hash does not match the recomputed hash");
      return;
    }
    this._expectedSeq = r.seq + 1n;
    this._prevHash = r.hash;
  }

  report(): ChainReport {
    return {
      ok: this._bad === undefined,
      records: this._count,
      firstBadSeq: this._bad?.seq ?? 0n,
      reason: this._bad?.reason ?? "",
      headHash: this._prevHash,
    };
  }

  /** Counts `r` and checks its seq and prev_hash link; false when it (or an earlier record) failed. */
  private _links(r: { seq: bigint; prevHash: string }): boolean {
    this._count++;
    if (this._bad) return false;
    if (r.seq !== this._expectedSeq) return this._fail(r, `expected seq ${this._expectedSeq}, found ${r.seq}`) ?? false;
    if (r.prevHash !== this._prevHash) return this._fail(r, "prev_hash does not link to the previous record's hash") ?? false;
    return true;
  }

  private _canonical(r: { seq: bigint; prevHash: string }, event: Event): string | undefined {
    try {
      return canonicalRecordString(event, r.prevHash, r.seq);
    } catch {
      return this._fail(r, "stored event has no canonical JSON form");
    }
  }

  private _fail(r: { seq: bigint }, reason: string): undefined {
    this._bad = { seq: r.seq, reason };
    return undefined;
  }
}

/** Lowercase hex SHA-256 of a string's UTF-8 with WebCrypto (browsers, Node 20, workerd). */
export async function webSha256Hex(s: string): Promise<string> {
  return hexOf(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s))));
}

/** The chain check with an asynchronous SHA-256 (default WebCrypto), over records in seq order. */
export async function verifyChainAsync(
  records: Iterable<ChainRecord> | AsyncIterable<ChainRecord>,
  sha256Hex: (s: string) => Promise<string> = webSha256Hex,
): Promise<ChainReport> {
  const check = new ChainCheck();
  for await (const r of records) {
    const canonical = check.admit(r);
    if (canonical !== undefined) check.settle(r, await sha256Hex(canonical));
  }
  return check.report();
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
