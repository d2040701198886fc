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
    queryRows(sql: string, ...params: SqlValue[]): SqlValue[][] {
      // workerd's raw iterator has a native toArray (not in its types); an iterator without one is read out.
      const raw = storage.sql.exec(sql, ...(params as (string | number | null | ArrayBuffer)[])).raw() as IterableIterator<SqlStorageValue[]> & {
        toArray?: () => SqlStorageValue[][];
      };
      const rows = raw.toArray ? raw.toArray() : Array.from(raw);
      for (const row of rows) {
        for (let i = 0; i < row.length; i++) {
          const v = row[i];
          if (v instanceof ArrayBuffer) row[i] = new Uint8Array(v) as never;
        }
      }
      return rows as unknown as SqlValue[][];
    },
    transaction<T>(fn: () => T): T {
      return storage.transactionSync(fn);
    },
  };
}
