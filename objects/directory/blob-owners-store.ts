/**
 * Which live sessions of a tenant own each blob (docs/blobs.md "Deletion"): the reference count
 * behind "deleting a session erases its blobs, but a fork shares its parent's". A session owns a
 * digest from before its first record naming it is written (objects/blobs/blob-writer.ts); a fork
 * child owns its parent's digests up to the fork seq from before it is seeded (worker/fork.ts).
 * Deleting a session releases its rows in the same transaction as its tombstone; a digest left
 * with no owner is queued in `blob_gc` and deleted from the bucket by the Directory, which retries
 * until the queue is empty (so a crash between the two forgets nothing). Tested in
 * test/node/directory/blob-owners-store.test.ts.
 */
import type { Sha256Hex } from "../../proto/blob-ref.js";
import { migrate, type Migrations } from "../storage/migrate.js";
import type { SqlDb } from "../storage/sql.js";

const MIGRATIONS: Migrations = [
  [
    "CREATE TABLE blob_owners (sha256 TEXT NOT NULL, uid TEXT NOT NULL, PRIMARY KEY (sha256, uid)) WITHOUT ROWID",
    "CREATE INDEX blob_owners_by_uid ON blob_owners (uid)",
    "CREATE TABLE blob_gc (sha256 TEXT PRIMARY KEY, tenant TEXT NOT NULL)",
  ],
];

const stmts = {
  own: "INSERT INTO blob_owners (sha256, uid) VALUES (?, ?) ON CONFLICT DO NOTHING",
  unqueue: "DELETE FROM blob_gc WHERE sha256 = ?",
  ofUid: "SELECT sha256 FROM blob_owners WHERE uid = ?",
  releaseUid: "DELETE FROM blob_owners WHERE uid = ?",
  owners: "SELECT COUNT(*) AS n FROM blob_owners WHERE sha256 = ?",
  queue: "INSERT INTO blob_gc (sha256, tenant) VALUES (?, ?) ON CONFLICT DO NOTHING",
  queued: "SELECT sha256, tenant FROM blob_gc ORDER BY sha256 LIMIT ?",
  deleted: "DELETE FROM blob_gc WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM blob_owners WHERE sha256 = ?)",
} as const;

export class BlobOwnersStore {
  constructor(private readonly _db: SqlDb) {
    migrate(_db, MIGRATIONS, "blob owners", "blob_owners_version");
  }

  /** Counts each of `uids` as an owner of each digest; a digest queued for deletion is kept. */
  own(uids: readonly string[], shas: readonly Sha256Hex[]): void {
    this._db.transaction(() => {
      for (const sha of shas) {
        for (const uid of uids) this._db.query(stmts.own, sha, uid);
        this._db.query(stmts.unqueue, sha);
      }
    });
  }

  /** Releases everything `uid` owns; digests nobody owns any more are queued for deletion. Idempotent. */
  release(tenant: string, uid: string): void {
    this._db.transaction(() => {
      const shas = this._db.query<{ sha256: string }>(stmts.ofUid, uid).map((r) => r.sha256);
      this._db.query(stmts.releaseUid, uid);
      for (const sha of shas) {
        if ((this._db.query<{ n: number }>(stmts.owners, sha)[0]?.n ?? 0) === 0) this._db.query(stmts.queue, sha, tenant);
      }
    });
  }

  owners(sha: Sha256Hex): number {
    return this._db.query<{ n: number }>(stmts.owners, sha)[0]?.n ?? 0;
  }

  /** Digests waiting to be deleted from the bucket, at most `limit`. */
  queued(limit: number): { sha256: Sha256Hex; tenant: string }[] {
    return this._db.query<{ sha256: string; tenant: string }>(stmts.queued, limit) as { sha256: Sha256Hex; tenant: string }[];
  }

  /** The bucket no longer holds `sha`: forget it, unless an owner appeared meanwhile. */
  deleted(sha: Sha256Hex): void {
    this._db.query(stmts.deleted, sha, sha);
  }
}
