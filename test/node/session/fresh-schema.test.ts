/**
 * A new session's tables are created at once (objects/session/schema.ts SESSION_SCHEMA_FRESH), not
 * by running every migration: both ways must leave the same database, table for table and column
 * for column (name, type, NOT NULL, default, key), the same indexes and CHECKs, and the same
 * schema stamp; and a session stored the fresh way runs a journal as one migrated does.
 */
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { EventKind, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Journal } from "../../../objects/journal/journal.js";
import { migrateSession, SESSION_MIGRATIONS } from "../../../objects/session/schema.js";
import { migrate, schemaVersion } from "../../../objects/storage/migrate.js";
import type { SqlDb } from "../../../objects/storage/sql.js";
import { createTestDb } from "../support/sqljs-db.js";

/** Every table and index with its columns, keys and index columns; never the CREATE text, which ALTERs rewrite. */
function shape(db: SqlDb) {
  const objects = db.query<{ type: string; name: string; tbl_name: string }>(
    "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_stat%' ORDER BY type, name",
  );
  return objects.map((o) => ({
    ...o,
    columns: o.type === "table" ? db.query(`PRAGMA table_info(${o.name})`) : undefined,
    indexes: o.type === "table" ? db.query(`PRAGMA index_list(${o.name})`) : undefined,
    indexColumns: o.type === "index" ? db.query(`PRAGMA index_info(${o.name})`) : undefined,
  }));
}

/** Whether a statement is refused (a CHECK, NOT NULL or key). */
function refused(db: SqlDb, sql: string, ...params: (string | number)[]): boolean {
  try {
    db.query(sql, ...params);
    return false;
  } catch {
    return true;
  }
}

describe("a new session's schema", () => {
  it("created at once, it is the database every migration leaves: tables, columns, keys, indexes, stamp", () => {
    const migrated = createTestDb();
    migrate(migrated, SESSION_MIGRATIONS, "session");
    const fresh = createTestDb();
    migrateSession(fresh);
    expect(shape(fresh)).toEqual(shape(migrated));
    expect(shape(fresh).map((o) => o.name)).toEqual(expect.arrayContaining(["events", "fence", "meta", "blob_refs", "schema_version"]));
    expect(schemaVersion(fresh)).toBe(SESSION_MIGRATIONS.length);
    expect(schemaVersion(migrated)).toBe(SESSION_MIGRATIONS.length);
    // Migrating again does nothing either way.
    migrateSession(fresh);
    migrateSession(migrated);
    expect(shape(fresh)).toEqual(shape(migrated));
  });

  it("both take and refuse the same rows: one meta and fence row (id 1), NOT NULL, a blob's key", () => {
    const migrated = createTestDb();
    migrate(migrated, SESSION_MIGRATIONS, "session");
    const fresh = createTestDb();
    migrateSession(fresh);
    const attempts: [string, ...(string | number)[]][] = [
      ["INSERT INTO fence (id, value) VALUES (2, 1)"],
      ["INSERT INTO fence (id, value) VALUES (1, 1)"],
      ["INSERT INTO meta (id, tenant, uid, session, create_ms, update_ms, compute_state, exec_state) VALUES (2, 't', 'u', x'00', 0, 0, 0, 0)"],
      ["INSERT INTO meta (id, tenant, uid, session, create_ms, update_ms, compute_state, exec_state) VALUES (1, 't', 'u', x'00', 0, 0, 0, 0)"],
      ["INSERT INTO events (seq, hash, fence) VALUES (1, x'00', 0)"],
      ["INSERT INTO blob_refs (sha256, bytes, seq) VALUES ('a', 1, 1)"],
      ["INSERT INTO blob_refs (sha256, bytes, seq) VALUES ('a', 2, 2)"],
    ];
    // In order, each on both databases: the same answer, and the one a reader of the schema expects.
    const answers = attempts.map(([sql, ...p]) => [refused(fresh, sql, ...p), refused(migrated, sql, ...p)]);
    expect(answers.map(([f, m]) => f === m)).toEqual(attempts.map(() => true));
    expect(answers.map(([f]) => f)).toEqual([true, false, true, false, true, false, true]);
    // The fence row's through_seq has its default in both.
    expect(fresh.query("SELECT through_seq FROM fence")).toEqual(migrated.query("SELECT through_seq FROM fence"));
  });

  it("a journal on the fresh tables appends and reads back as on migrated ones", () => {
    const heads = [];
    for (const fresh of [true, false]) {
      const db = createTestDb();
      if (fresh) migrateSession(db);
      else migrate(db, SESSION_MIGRATIONS, "session");
      const j = new Journal(db);
      const ev = create(EventSchema, { kind: EventKind.EVENT_INPUT, executionId: "x" });
      for (let i = 0; i < 3; i++) expect(j.append([ev, ev], i === 0 ? { fence: 0n, mintFence: true } : { fence: j.fence() }).ok).toBe(true);
      heads.push({ head: j.head(), fence: j.fence(), verified: j.verify().ok, rows: j.read(1n, 0n, 100).length });
    }
    expect(heads[0]).toEqual(heads[1]);
    expect(heads[0]!.rows).toBe(6);
  });
});
