/**
 * Migrations of a SessionObject's SQLite database. A session's storage is created only when the
 * session is (create, or a fork child's seed), so looking up an unknown uid leaves nothing behind.
 */
import { SESSION_BLOBS_SCHEMA } from "../blobs/session-blobs.js";
import { JOURNAL_FENCE_THROUGH, JOURNAL_PACKED_HASHES, JOURNAL_SCHEMA_1, JOURNAL_SCHEMA_FRESH } from "../journal/journal.js";
import { migrate, schemaVersion, type Migrations } from "../storage/migrate.js";
import type { SqlDb } from "../storage/sql.js";
import { META_PENDING_COLUMNS, META_PLACEMENT_COLUMN, META_SCHEMA, META_SCHEMA_FRESH } from "./meta-store.js";

export const SESSION_MIGRATIONS: Migrations = [
  // 1: the journal, its fence and the session's metadata row.
  [...JOURNAL_SCHEMA_1, ...META_SCHEMA],
  // 2: the pending approval projection and its deadline.
  META_PENDING_COLUMNS,
  // 3: the compute state placements on a runtime backend set.
  META_PLACEMENT_COLUMN,
  // 4: the journal's hashes as bytes, without the prev_hash column.
  JOURNAL_PACKED_HASHES,
  // 5: the blobs the journal references (docs/blobs.md).
  SESSION_BLOBS_SCHEMA,
  // 6: no statement. From here on records may be stored short (objects/journal/stored-event.ts),
  // which a build before it would read as events that do not decode: the stamp makes that build
  // refuse the storage ("newer than this build") instead, so a rollback fails loudly.
  [],
  // 7: the fence row's through_seq. From here on a turn's minted fence is only in its records,
  // which a build before it would not read, so the stamp also makes such a build refuse the storage.
  JOURNAL_FENCE_THROUGH,
];

/**
 * The tables all of SESSION_MIGRATIONS leave, created at once for a new session (or a fork child): a new
 * session object ran some 20 statements to build the old tables and move them on (about 2 ms of a
 * CreateSession's 12 under `wrangler dev`). Kept equal to their result, column for column,
 * by test/node/session/fresh-schema.test.ts.
 */
export const SESSION_SCHEMA_FRESH = [JOURNAL_SCHEMA_FRESH, META_SCHEMA_FRESH, ...SESSION_BLOBS_SCHEMA].flat();

export function isSessionInitialized(db: SqlDb): boolean {
  return schemaVersion(db) > 0;
}

export function migrateSession(db: SqlDb): void {
  migrate(db, SESSION_MIGRATIONS, "session", undefined, SESSION_SCHEMA_FRESH);
}
