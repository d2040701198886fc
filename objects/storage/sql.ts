/**
 * The minimal SQL interface every store in objects/ is written against.
 *
 * Stores take a `SqlDb`, not a Durable Object, so the same SQL runs on a Durable Object's SQLite
 * (`sqlDbFromStorage` in do-sql.ts) and on sql.js in Node unit tests (test/node/support/sqljs-db.ts).
 * Everything is synchronous: a multi-statement write is one `transaction(() => ...)` whose
 * callback must not await; a throw rolls the whole transaction back.
 */

export type SqlValue = string | number | null | Uint8Array;
export type SqlRow = Record<string, SqlValue>;

export interface SqlDb {
  /** Runs one statement and returns all its rows (empty for writes). BLOBs come back as Uint8Array. */
  query<T extends SqlRow = SqlRow>(sql: string, ...params: SqlValue[]): T[];
  /**
   * `query`'s rows as arrays of their values in the statement's column order: cheaper than rows as
   * objects when a read returns many (the journal's pages).
   */
  queryRows(sql: string, ...params: SqlValue[]): SqlValue[][];
  /** Runs `fn` as one synchronous transaction. */
  transaction<T>(fn: () => T): T;
}
