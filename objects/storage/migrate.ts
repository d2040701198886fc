/**
 * Numbered migrations keyed on a version row. Each store lists its migrations in order;
 * `migrate` applies the missing ones in one transaction and refuses a database stamped newer than
 * this build. Stores that share one database (the Directory's session index and harness registry)
 * keep their versions in separate tables, so each list can grow on its own.
 */
import type { SqlDb } from "./sql.js";

/**
 * Each migration is a list of steps: SQL, or (rarely) a function for a rewrite SQL cannot express,
 * such as re-encoding stored protobuf bytes. Both run inside the one migration transaction.
 */
export type Migrations = readonly (readonly MigrationStep[])[];
export type MigrationStep = string | ((db: SqlDb) => void);

/** The default version table; a second store in the same database names its own. */
export const SCHEMA_VERSION_TABLE = "schema_version";

/** The stamped schema version, 0 when this database was never initialized. */
export function schemaVersion(db: SqlDb, table = SCHEMA_VERSION_TABLE): number {
  checkTable(table);
  const t = db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", table);
  if (t.length === 0) return 0;
  return db.query<{ version: number }>(`SELECT version FROM ${table}`)[0]?.version ?? 0;
}

/**
 * `fresh`: the schema all of `migrations` leave, created at once, for a database that has none
 * yet (a store's tables as this build keeps them, without the history of how they got there). A
 * test must keep it equal to what the migrations make (test/node/session/fresh-schema.test.ts).
 */
export function migrate(db: SqlDb, migrations: Migrations, what: string, table = SCHEMA_VERSION_TABLE, fresh?: readonly MigrationStep[]): void {
  checkTable(table);
  db.transaction(() => {
    const from = schemaVersion(db, table);
    if (from > migrations.length) {
      throw new Error(`${what} storage has schema ${from}, newer than this build's ${migrations.length}`);
    }
    if (from === migrations.length) return;
    if (from === 0) db.query(`CREATE TABLE ${table} (version INTEGER NOT NULL)`);
    const steps = from === 0 && fresh ? [fresh] : migrations.slice(from);
    for (const migration of steps) {
      for (const step of migration) {
        if (typeof step === "string") db.query(step);
        else step(db);
      }
    }
    db.query(`DELETE FROM ${table}`);
    db.query(`INSERT INTO ${table} (version) VALUES (?)`, migrations.length);
  });
}

// The name is spliced into SQL: only constants of the stores reach here, but keep it a plain word.
function checkTable(table: string): void {
  if (!/^[a-z_]+$/.test(table)) throw new Error(`bad version table name ${JSON.stringify(table)}`);
}
