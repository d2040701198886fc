/**
 * A session's index of the blobs its journal references (docs/blobs.md): one row per digest with
 * its length and the first seq that names it. Written in the same transaction as the records that
 * name them (SessionState.commit, a fork child's seed), so it is exactly what the journal says.
 * GetBlob answers only for a digest listed here (a session cannot be used to read another's blob),
 * a fork hands its children the rows up to the fork seq, and Audit checks each listed blob.
 * Tested in test/node/blobs/session-blobs.test.ts.
 */
import { decodeBinary } from "../../proto/binary-reader.js";
import { blobRefsOf, mayHoldBlobRefs, type Sha256Hex } from "../../proto/blob-ref.js";
import { EventSchema, type Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { SqlDb } from "../storage/sql.js";

/** Run by the session schema's migration 5. */
export const SESSION_BLOBS_SCHEMA = ["CREATE TABLE blob_refs (sha256 TEXT PRIMARY KEY, bytes INTEGER NOT NULL, seq INTEGER NOT NULL)"];

const stmts = {
  note: "INSERT INTO blob_refs (sha256, bytes, seq) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
  get: "SELECT sha256, bytes, seq FROM blob_refs WHERE sha256 = ?",
  upTo: "SELECT sha256, bytes, seq FROM blob_refs WHERE seq <= ? ORDER BY seq, sha256",
  any: "SELECT 1 AS one FROM blob_refs WHERE seq <= ? LIMIT 1",
} as const;

export interface BlobRow {
  sha256: Sha256Hex;
  bytes: number;
  /** The first record that names it. */
  seq: bigint;
}

type Row = { sha256: string; bytes: number; seq: number };

export class SessionBlobs {
  /** Whether any row exists: undefined until read (most sessions have none, and stay unread). */
  private _any: boolean | undefined;

  constructor(private readonly _db: SqlDb) {}

  /** Indexes the references in records being written; call inside their transaction. */
  note(records: readonly { seq: bigint; event: Uint8Array; decoded?: Event }[]): void {
    for (const r of records) {
      if (!mayHoldBlobRefs(r.event)) continue;
      const ev = r.decoded ?? decodeBinary(EventSchema, r.event);
      for (const ref of blobRefsOf(ev)) {
        this._db.query(stmts.note, ref.sha256, ref.bytes, Number(r.seq));
        this._any = true;
      }
    }
  }

  get(sha: Sha256Hex): BlobRow | undefined {
    const row = this._db.query<Row>(stmts.get, sha)[0];
    return row && rowOf(row);
  }

  /** Every blob named by records 1..`seq` (0: all). */
  upTo(seq: bigint): BlobRow[] {
    return this._db.query<Row>(stmts.upTo, seq <= 0n ? Number.MAX_SAFE_INTEGER : Number(seq)).map(rowOf);
  }

  /**
   * Whether records 1..`seq` name any blob (0: any record). Asked before every turn, so whether
   * the session has any row at all is read once and kept: most sessions have none.
   */
  any(seq = 0n): boolean {
    this._any ??= this._db.query(stmts.any, Number.MAX_SAFE_INTEGER).length > 0;
    if (!this._any) return false;
    return seq <= 0n || this._db.query(stmts.any, Number(seq)).length > 0;
  }

  /** After the storage was replaced underneath (erase). */
  forget(): void {
    this._any = undefined;
  }
}

function rowOf(r: Row): BlobRow {
  return { sha256: r.sha256 as Sha256Hex, bytes: r.bytes, seq: BigInt(r.seq) };
}
