/**
 * A tenant's session index (docs/design.md §2, `Directory`): one row per session with the rendered
 * Session as of its last change, for ListSessions; and the chain head (seq, hash) each session
 * reported, so an auditor can tell a truncated journal from an intact one.
 *
 * Paging is keyset over (create_ms DESC, uid ASC) (docs/behaviour.md §4.3): the page token names the
 * last row returned and the next page continues strictly after it, so sessions created mid-walk
 * are never skipped or repeated. Tested in test/node/directory/directory-store.test.ts.
 *
 * A row is `live` while its session runs turns back to back (objects/session/directory-reports.ts):
 * the session then stops reporting each change, so a listing asks the session itself for the rows
 * it marks live (worker/sessions-service.ts), and the session settles its row once it is quiet.
 */
import { isSessionUid } from "../../proto/ids.js";
import { MAX_STATICS_BYTES } from "../session/meta-store.js";
import { migrate, type Migrations } from "../storage/migrate.js";
import type { SqlDb } from "../storage/sql.js";

const MIGRATIONS: Migrations = [
  [
    `CREATE TABLE sessions (
       uid TEXT PRIMARY KEY,
       project TEXT NOT NULL,
       create_ms INTEGER NOT NULL,
       update_ms INTEGER NOT NULL,
       head_seq INTEGER NOT NULL,
       head_hash TEXT NOT NULL,
       session BLOB NOT NULL
     )`,
    "CREATE INDEX sessions_by_project ON sessions (project, create_ms DESC, uid ASC)",
  ],
  // 2: tombstones. A deleted session keeps its row (and final head) with deleted_ms set.
  ["ALTER TABLE sessions ADD COLUMN deleted_ms INTEGER"],
  // 3: the listing order as one ascending key, (-create_ms, uid), indexed over listed rows only,
  // so a page after a token is a range seek (row-value comparison) rather than a scan from the top.
  [
    "ALTER TABLE sessions ADD COLUMN neg_create_ms INTEGER NOT NULL DEFAULT 0",
    "UPDATE sessions SET neg_create_ms = -create_ms",
    "CREATE INDEX sessions_listing ON sessions (project, neg_create_ms, uid) WHERE deleted_ms IS NULL",
    "DROP INDEX sessions_by_project",
  ],
  // 4: live rows: the stored Session may trail the session's own state; a listing asks the session.
  ["ALTER TABLE sessions ADD COLUMN live INTEGER NOT NULL DEFAULT 0"],
];

const stmts = {
  upsert: `INSERT INTO sessions (uid, project, create_ms, update_ms, head_seq, head_hash, session, live, neg_create_ms)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, -?3)
           ON CONFLICT (uid) DO UPDATE SET
             project = excluded.project, update_ms = excluded.update_ms, head_seq = excluded.head_seq,
             head_hash = excluded.head_hash, session = excluded.session, live = excluded.live
           WHERE sessions.deleted_ms IS NULL
             AND (excluded.head_seq > sessions.head_seq
              OR (excluded.head_seq = sessions.head_seq AND excluded.update_ms >= sessions.update_ms))`,
  first: `SELECT uid, create_ms, session, live FROM sessions WHERE project = ? AND deleted_ms IS NULL
          ORDER BY neg_create_ms, uid LIMIT ?`,
  after: `SELECT uid, create_ms, session, live FROM sessions
          WHERE project = ? AND deleted_ms IS NULL AND (neg_create_ms, uid) > (?, ?)
          ORDER BY neg_create_ms, uid LIMIT ?`,
  head: "SELECT head_seq, head_hash, deleted_ms FROM sessions WHERE uid = ?",
  tombstone: `INSERT INTO sessions (uid, project, create_ms, update_ms, head_seq, head_hash, session, deleted_ms, neg_create_ms)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?, -?3)
              ON CONFLICT (uid) DO UPDATE SET head_seq = excluded.head_seq, head_hash = excluded.head_hash,
                session = excluded.session, live = 0, deleted_ms = COALESCE(sessions.deleted_ms, excluded.deleted_ms)`,
} as const;

/** What a SessionObject reports after each change. */
export interface DirectoryRow {
  uid: string;
  project: string;
  createMs: number;
  updateMs: number;
  headSeq: number;
  headHash: string;
  /** The binary Session as rendered by its SessionObject. */
  session: Uint8Array;
  /**
   * The session runs turns back to back and reports only now and then: `session` and the head may
   * trail its own state, so a listing asks the session (unset: the row is the session's state).
   */
  live?: boolean;
}

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

export type ListResult =
  | {
      ok: true;
      sessions: Uint8Array[];
      nextPageToken: string;
      /** The rows of `sessions` that are live (their index and uid): ask those sessions for their state. */
      live: { index: number; uid: string }[];
    }
  | { ok: false; reason: "bad_token" };

export class DirectoryStore {
  constructor(private readonly _db: SqlDb) {
    migrate(_db, MIGRATIONS, "directory");
  }

  /** Records a session's latest state; an older report (lower head) never overwrites a newer one. */
  upsert(r: DirectoryRow): void {
    this._db.query(stmts.upsert, r.uid, r.project, r.createMs, r.updateMs, r.headSeq, r.headHash, r.session, r.live ? 1 : 0);
  }

  /** Registers a whole fork fan-out at once: its children become visible together or not at all. */
  upsertMany(rows: readonly DirectoryRow[]): void {
    this._db.transaction(() => {
      for (const r of rows) this.upsert(r);
    });
  }

  /** Marks a session deleted, keeping its final head; it no longer lists, and reports never revive it. */
  tombstone(r: DirectoryRow, deletedMs: number): void {
    this._db.query(stmts.tombstone, r.uid, r.project, r.createMs, r.updateMs, r.headSeq, r.headHash, r.session, deletedMs);
  }

  list(project: string, pageSize: number, pageToken: string): ListResult {
    const size = pageSize <= 0 ? DEFAULT_PAGE_SIZE : Math.min(pageSize, MAX_PAGE_SIZE);
    // A stored project fits in its session's metadata, so a longer one matches nothing; and a
    // client-sized one would reach SQLite as a parameter over its 2 MB limit, SQLITE_TOOBIG,
    // which surfaced as INTERNAL (test/node/fuzz).
    if (project.length > MAX_STATICS_BYTES) return { ok: true, sessions: [], nextPageToken: "", live: [] };
    let rows: { uid: string; create_ms: number; session: Uint8Array; live: number }[];
    if (pageToken === "") {
      rows = this._db.query(stmts.first, project, size + 1);
    } else {
      const after = parsePageToken(pageToken);
      if (!after) return { ok: false, reason: "bad_token" };
      rows = this._db.query(stmts.after, project, -after.createMs, after.uid, size + 1);
    }
    const page = rows.slice(0, size);
    const last = page[page.length - 1];
    const nextPageToken = rows.length > size && last ? pageTokenFor(last.create_ms, last.uid) : "";
    const live: { index: number; uid: string }[] = [];
    page.forEach((r, index) => r.live && live.push({ index, uid: r.uid }));
    return { ok: true, sessions: page.map((r) => r.session), nextPageToken, live };
  }

  /** The head a session last reported (its final head once deleted). */
  head(uid: string): { seq: number; hash: string; deletedMs?: number } | undefined {
    const row = this._db.query<{ head_seq: number; head_hash: string; deleted_ms: number | null }>(stmts.head, uid)[0];
    if (!row) return undefined;
    return row.deleted_ms === null ? { seq: row.head_seq, hash: row.head_hash } : { seq: row.head_seq, hash: row.head_hash, deletedMs: row.deleted_ms };
  }
}

/** Opaque to clients: unpadded base64url of "<create_ms>\0<uid>". */
export function pageTokenFor(createMs: number, uid: string): string {
  return btoa(`${createMs}\0${uid}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function parsePageToken(token: string): { createMs: number; uid: string } | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let raw: string;
  try {
    raw = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return undefined;
  }
  const sep = raw.indexOf("\0");
  if (sep < 0) return undefined;
  const ms = raw.slice(0, sep);
  const uid = raw.slice(sep + 1);
  if (!/^\d{1,16}$/.test(ms) || !isSessionUid(uid)) return undefined;
  return { createMs: Number(ms), uid };
}
