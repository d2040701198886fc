/**
 * The SqlDb (sql.ts) of a SQLite-backed Durable Object. workerd-only, so it lives apart from the
 * interface that Node tests also compile.
 */
import type { SqlDb, SqlRow, SqlValue } from "./sql.js";

/** A SqlDb over a SQLite-backed Durable Object's storage. */
export function sqlDbFromStorage(storage: DurableObjectStorage): SqlDb {
  return {
    query<T extends SqlRow>(sql: string, ...params: SqlValue[]): T[] {
      const cursor = storage.sql.exec(sql, ...params.map(toBinding));
      // Rows are built here from the raw value arrays rather than taken from toArray(): objects
      // made in JS with the same keys in the same order share one shape, where walking the keys of
      // the runtime's own row objects cost a few microseconds a row (most of a Replay's CPU).
      const names = cursor.columnNames;
      const rows: Record<string, SqlValue>[] = [];
      for (const values of cursor.raw()) {
        const row: Record<string, SqlValue> = {};
        for (let i = 0; i < names.length; i++) {
          const v = values[i]!;
          row[names[i]!] = v instanceof ArrayBuffer ? new Uint8Array(v) : v;
        }
        rows.push(row);
      }
      return rows as T[];
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
