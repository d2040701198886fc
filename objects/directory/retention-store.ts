/**
 * Per-project retention (docs/retention.md): the policies a tenant's Directory keeps, and which of
 * its sessions a policy selects. A session is idle since the last change it reported to the
 * Directory (the `update_ms` of its row); a policy selects a project's listed sessions idle
 * longer than its days, except its `keep_latest` most recently active ones, oldest first.
 *
 * Plain SQL over the Directory's database (the `sessions` table of directory-store.ts), behind
 * the SqlDb seam. The sweep that deletes what it selects is retention-sweep.ts.
 */
import { migrate, type Migrations } from "../storage/migrate.js";
import type { SqlDb } from "../storage/sql.js";

const MIGRATIONS: Migrations = [
  [
    `CREATE TABLE retention (
       project TEXT PRIMARY KEY,
       tenant TEXT NOT NULL,
       days INTEGER NOT NULL,
       keep_latest INTEGER NOT NULL,
       update_ms INTEGER NOT NULL,
       deleted INTEGER NOT NULL DEFAULT 0
     )`,
    `CREATE TABLE retention_sweep (id INTEGER PRIMARY KEY CHECK (id = 1), last_ms INTEGER NOT NULL, runs INTEGER NOT NULL)`,
    // Candidates are a range of one project's listed rows by last activity.
    "CREATE INDEX sessions_by_activity ON sessions (project, update_ms, uid) WHERE deleted_ms IS NULL",
  ],
];

const stmts = {
  set: `INSERT INTO retention (project, tenant, days, keep_latest, update_ms) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (project) DO UPDATE SET tenant = excluded.tenant, days = excluded.days,
          keep_latest = excluded.keep_latest, update_ms = excluded.update_ms`,
  clear: "DELETE FROM retention WHERE project = ?",
  get: "SELECT project, tenant, days, keep_latest, update_ms, deleted FROM retention WHERE project = ?",
  all: "SELECT project, tenant, days, keep_latest, update_ms, deleted FROM retention ORDER BY project",
  // Idle rows, oldest activity first, skipping the project's `keep_latest` most recent rows.
  candidates: `SELECT uid, update_ms, session FROM sessions
               WHERE project = ?1 AND deleted_ms IS NULL AND update_ms < ?2
                 AND uid NOT IN (SELECT uid FROM sessions WHERE project = ?1 AND deleted_ms IS NULL
                                 ORDER BY update_ms DESC, uid DESC LIMIT ?3)
               ORDER BY update_ms, uid LIMIT ?4`,
  counted: "UPDATE retention SET deleted = deleted + ? WHERE project = ?",
  // A row whose session is gone without a tombstone (it answered NOT_FOUND): tombstoned here.
  gone: "UPDATE sessions SET deleted_ms = ? WHERE uid = ? AND deleted_ms IS NULL",
  swept: `INSERT INTO retention_sweep (id, last_ms, runs) VALUES (1, ?, 1)
          ON CONFLICT (id) DO UPDATE SET last_ms = excluded.last_ms, runs = runs + 1`,
  lastSweep: "SELECT last_ms, runs FROM retention_sweep WHERE id = 1",
} as const;

export interface RetentionPolicyRow {
  project: string;
  /** The tenant the Directory serves (a Durable Object does not know its own name). */
  tenant: string;
  days: number;
  keepLatest: number;
  updateMs: number;
  /** Sessions deleted under this project's policies so far. */
  deleted: number;
}

export interface RetentionCandidateRow {
  uid: string;
  updateMs: number;
  /** The binary Session as its row holds it. */
  session: Uint8Array;
}

export const MAX_RETENTION_DAYS = 36_500;
export const MAX_KEEP_LATEST = 1_000_000;

type Row = { project: string; tenant: string; days: number; keep_latest: number; update_ms: number; deleted: number };

export class RetentionStore {
  /** `db` must already hold the Directory's `sessions` table (DirectoryStore migrates it). */
  constructor(private readonly _db: SqlDb) {
    migrate(_db, MIGRATIONS, "retention", "retention_version");
  }

  set(p: Omit<RetentionPolicyRow, "deleted">): void {
    this._db.query(stmts.set, p.project, p.tenant, p.days, p.keepLatest, p.updateMs);
  }

  clear(project: string): void {
    this._db.query(stmts.clear, project);
  }

  get(project: string): RetentionPolicyRow | undefined {
    const r = this._db.query<Row>(stmts.get, project)[0];
    return r && policyOf(r);
  }

  all(): RetentionPolicyRow[] {
    return this._db.query<Row>(stmts.all).map(policyOf);
  }

  /** What `p` selects at `nowMs` (a "day" is `dayMs`), oldest activity first, at most `limit`. */
  candidates(p: Pick<RetentionPolicyRow, "project" | "days" | "keepLatest">, nowMs: number, dayMs: number, limit: number): RetentionCandidateRow[] {
    const cutoff = nowMs - p.days * dayMs;
    return this._db
      .query<{ uid: string; update_ms: number; session: Uint8Array }>(stmts.candidates, p.project, cutoff, p.keepLatest, limit)
      .map((r) => ({ uid: r.uid, updateMs: r.update_ms, session: r.session }));
  }

  counted(project: string, n: number): void {
    if (n > 0) this._db.query(stmts.counted, n, project);
  }

  tombstoneGone(uid: string, nowMs: number): void {
    this._db.query(stmts.gone, nowMs, uid);
  }

  swept(nowMs: number): void {
    this._db.query(stmts.swept, nowMs);
  }

  /** When the sweep last ran (0: never) and how many times it has run. */
  lastSweep(): { lastMs: number; runs: number } {
    const r = this._db.query<{ last_ms: number; runs: number }>(stmts.lastSweep)[0];
    return { lastMs: r?.last_ms ?? 0, runs: r?.runs ?? 0 };
  }
}

function policyOf(r: Row): RetentionPolicyRow {
  return { project: r.project, tenant: r.tenant, days: r.days, keepLatest: r.keep_latest, updateMs: r.update_ms, deleted: r.deleted };
}
