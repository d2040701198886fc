/**
 * A SqlDb (objects/storage/sql.ts) over sql.js, so the stores' SQL runs in Node unit tests exactly
 * as written. Transactions use SAVEPOINTs, like a Durable Object's transactionSync.
 */
import initSqlJs, { type Database } from "sql.js";
import type { SqlDb, SqlRow, SqlValue } from "../../../objects/storage/sql.js";

const SQL = await initSqlJs();

export interface TestDb extends SqlDb {
  raw: Database;
}

export function createTestDb(bytes?: Uint8Array): TestDb {
  const raw = bytes ? new SQL.Database(bytes) : new SQL.Database();
  let depth = 0;
  return {
    raw,
    query<T extends SqlRow>(sql: string, ...params: SqlValue[]): T[] {
      const stmt = raw.prepare(sql);
      try {
        stmt.bind(params as never);
        const rows: T[] = [];
        while (stmt.step()) rows.push(stmt.getAsObject() as T);
        return rows;
      } finally {
        stmt.free();
      }
    },
    queryRows(sql: string, ...params: SqlValue[]): SqlValue[][] {
      const stmt = raw.prepare(sql);
      try {
        stmt.bind(params as never);
        const rows: SqlValue[][] = [];
        while (stmt.step()) rows.push(stmt.get() as SqlValue[]);
        return rows;
      } finally {
        stmt.free();
      }
    },
    transaction<T>(fn: () => T): T {
      const name = `sp${depth++}`;
      raw.run(`SAVEPOINT ${name}`);
      try {
        const out = fn();
        if (out instanceof Promise) throw new Error("transaction callbacks must be synchronous");
        raw.run(`RELEASE ${name}`);
        return out;
      } catch (e) {
        raw.run(`ROLLBACK TO ${name}`);
        raw.run(`RELEASE ${name}`);
        throw e;
      } finally {
        depth--;
      }
    },
  };
}

/** What a Durable Object's deleteAll does to its SQLite database: every table is gone. */
export function eraseTestDb(db: TestDb): void {
  const tables = db.query<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  for (const t of tables) db.raw.run(`DROP TABLE "${t.name}"`);
}
