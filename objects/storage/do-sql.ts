/**
 * The SqlDb (sql.ts) of a SQLite-backed Durable Object. workerd-only, so it lives apart from the
 * interface that Node tests also compile.
 */
import type { SqlDb, SqlRow, SqlValue } from "./sql.js";

/** A SqlDb over a SQLite-backed Durable Object's storage. */
export function sqlDbFromStorage(storage: DurableObjectStorage): SqlDb {
  return {
    query<T extends SqlRow>(sql: string, ...params: SqlValue[]): T[] {
      const rows = storage.sql.exec(sql, ...params.map(toBinding)).toArray();
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

function toBinding(v: SqlValue): string | number | null | ArrayBuffer {
  if (v instanceof Uint8Array) {
    return v.byteOffset === 0 && v.byteLength === v.buffer.byteLength ? (v.buffer as ArrayBuffer) : (v.slice().buffer as ArrayBuffer);
  }
  return v;
}
