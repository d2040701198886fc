/**
 * The SqlDb (sql.ts) of a SQLite-backed Durable Object. workerd-only, so it lives apart from the
 * interface that Node tests also compile.
 */
import type { SqlDb, SqlRow, SqlValue } from "./sql.js";

/** A SqlDb over a SQLite-backed Durable Object's storage. */
export function sqlDbFromStorage(storage: DurableObjectStorage): SqlDb {
  return {
    query<T extends SqlRow>(sql: string, ...params: SqlValue[]): T[] {
      // workerd binds a Uint8Array as a BLOB of exactly its bytes, a view into a larger buffer
      // included (docs/platform.md, "SQL bindings"), although its types name ArrayBuffer only: a
      // fork's copy binds views into the pack it received, and nothing is copied to be bound.
      const rows = storage.sql.exec(sql, ...(params as (string | number | null | ArrayBuffer)[])).toArray();
      for (const row of rows) {
        for (const k in row) {
          const v = row[k];
          if (v instanceof ArrayBuffer) (row as Record<string, unknown>)[k] = new Uint8Array(v);
        }
      }
      return rows as unknown as T[];
    },
    transaction<T>(fn: () => T): T {
      return storage.transactionSync(fn);
    },
  };
}
