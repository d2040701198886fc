/**
 * The minimal SQL interface every store in objects/ is written against.
 *
 * Stores take a `SqlDb`, not a Durable Object, so the same SQL runs on a Durable Object's SQLite
 * (`sqlDbFromStorage`) and on sql.js in Node unit tests (test/node/support/sqljs-db.ts).
 * Everything is synchronous: a multi-statement write is one `transaction(() => ...)` whose
 * callback must not await (STYLE 17); a throw rolls the whole transaction back.
 */

export type SqlValue = string | number | null | Uint8Array;
export type SqlRow = Record<string, SqlValue>;

export interface SqlDb {
  /** Runs one statement and returns all its rows (empty for writes). BLOBs come back as Uint8Array. */
  query<T extends SqlRow = SqlRow>(sql: string, ...params: SqlValue[]): T[];
  /** Runs `fn` as one synchronous transaction. */
  transaction<T>(fn: () => T): T;
}

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
    return v.byteOffset === 0 && v.byteLength === v.buffer.byteLength
      ? (v.buffer as ArrayBuffer)
      : (v.slice().buffer as ArrayBuffer);
  }
  return v;
}
