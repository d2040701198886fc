/**
 * Chain verification: walk records in seq order, check each prev_hash link and recompute each
 * content hash from the stored event bytes (CONTRACT.md §7.1).
 *
 * One implementation serves the SessionObject (Audit.Verify), `agentctl verify` (over Replay) and
 * tests. Incremental (`push` one record at a time) so long journals verify page by page.
 * Tested in test/node/proto/verify.test.ts.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { EventSchema, type Event } from "./gen/agentsessions/v1/common_pb.js";
import { contentHash } from "./canon.js";

export interface ChainRecord {
  seq: bigint;
  prevHash: string;
  hash: string;
  /** The stored event: its bytes, or the decoded message (as served by Replay). */
  event: Uint8Array | Event;
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

export class ChainVerifier {
  private _expectedSeq = 1n;
  private _prevHash = "";
  private _count = 0n;
  private _bad: { seq: bigint; reason: string } | undefined;

  /** Checks one record; after the first failure later records are counted but not checked. */
  push(r: ChainRecord): void {
    this._count++;
    if (this._bad) return;
    const fail = (reason: string) => {
      this._bad = { seq: r.seq, reason };
    };
    if (r.seq !== this._expectedSeq) return fail(`expected seq ${this._expectedSeq}, found ${r.seq}`);
    if (r.prevHash !== this._prevHash) return fail("prev_hash does not link to the previous record's hash");
    let event: Event;
    try {
      event = r.event instanceof Uint8Array ? fromBinary(EventSchema, r.event) : r.event;
    } catch {
      return fail("stored event does not decode as agentsessions.v1.Event");
    }
    // The hash covers the decoded content, and a lenient decoder reads some altered encodings as
    // the same content. Stored bytes are always the deterministic encoding of the normalized
    // event, so anything else is an edit even when the content survived it.
    if (r.event instanceof Uint8Array && !sameBytes(toBinary(EventSchema, event), r.event)) {
      return fail("stored event bytes are not the encoding the journal wrote");
    }
    let recomputed: string;
    try {
      recomputed = contentHash(event, r.prevHash, r.seq);
    } catch {
      return fail("stored event has no canonical JSON form");
    }
    if (recomputed !== r.hash) return fail("content_hash does not match the recomputed hash");
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
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function verifyChain(records: Iterable<ChainRecord>): ChainReport {
  const v = new ChainVerifier();
  for (const r of records) v.push(r);
  return v.report();
}
