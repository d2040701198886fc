/**
 * Numbered migrations keyed on a `schema_version` row (STYLE 18). Each store lists its migrations
 * in order; `migrate` applies the missing ones in one transaction and refuses a database stamped
 * newer than this build.
 */
import type { SqlDb } from "./sql.js";

export type Migrations = readonly (readonly string[])[];

/** The stamped schema version, 0 when this database was never initialized. */
export function schemaVersion(db: SqlDb): number {
  const t = db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'");
  if (t.length === 0) return 0;
  return db.query<{ version: number }>("SELECT version FROM schema_version")[0]?.version ?? 0;
}

export function migrate(db: SqlDb, migrations: Migrations, what: string): void {
  db.transaction(() => {
    const from = schemaVersion(db);
    if (from > migrations.length) {
      throw new Error(`${what} storage has schema ${from}, newer than this build's ${migrations.length}`);
    }
    if (from === migrations.length) return;
    if (from === 0) db.query("CREATE TABLE schema_version (version INTEGER NOT NULL)");
    for (let v = from; v < migrations.length; v++) for (const sql of migrations[v]!) db.query(sql);
    db.query("DELETE FROM schema_version");
    db.query("INSERT INTO schema_version (version) VALUES (?)", migrations.length);
  });
}
