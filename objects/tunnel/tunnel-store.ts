/**
 * What a HarnessTunnel remembers across hibernation (SQLite): its connections and what they
 * announced, which stream runs on which connection for which session, and the one-time tokens
 * runtimes were handed. The sockets themselves are the runtime's (hibernatable WebSockets, tagged
 * with the connection id).
 */
import { migrate, type Migrations } from "../storage/migrate.js";
import type { SqlDb } from "../storage/sql.js";

const MIGRATIONS: Migrations = [
  [
    `CREATE TABLE connections (
       id TEXT PRIMARY KEY,
       session TEXT NOT NULL,
       descriptor BLOB,
       max_streams INTEGER NOT NULL,
       opened_ms INTEGER NOT NULL,
       draining INTEGER NOT NULL DEFAULT 0
     )`,
    `CREATE TABLE streams (
       id TEXT PRIMARY KEY,
       connection TEXT NOT NULL,
       session TEXT NOT NULL
     )`,
    "CREATE INDEX streams_by_connection ON streams (connection)",
    `CREATE TABLE tokens (hash TEXT PRIMARY KEY, session TEXT NOT NULL, expires_ms INTEGER NOT NULL)`,
    `CREATE TABLE seen (id INTEGER PRIMARY KEY CHECK (id = 1), first_ms INTEGER NOT NULL)`,
  ],
];

export interface ConnectionRow {
  id: string;
  /** The session a runtime incarnation serves alone; "" for a general connection. */
  session: string;
  descriptor: Uint8Array | null;
  max_streams: number;
  draining: number;
  streams: number;
}

export class TunnelStore {
  constructor(private readonly _db: SqlDb) {
    migrate(_db, MIGRATIONS, "tunnel");
  }

  addConnection(id: string, session: string, nowMs: number): void {
    this._db.query("INSERT INTO connections (id, session, max_streams, opened_ms) VALUES (?, ?, 0, ?)", id, session, nowMs);
  }

  /** Records a Hello; the name is remembered as served from now on. */
  hello(id: string, descriptor: Uint8Array, maxStreams: number, nowMs: number): void {
    this._db.transaction(() => {
      this._db.query("UPDATE connections SET descriptor = ?, max_streams = ? WHERE id = ?", descriptor, maxStreams, id);
      this._db.query("INSERT OR IGNORE INTO seen (id, first_ms) VALUES (1, ?)", nowMs);
    });
  }

  drain(id: string): void {
    this._db.query("UPDATE connections SET draining = 1 WHERE id = ?", id);
  }

  /** Forgets a connection; returns the streams that were running on it. */
  dropConnection(id: string): { id: string; session: string }[] {
    return this._db.transaction(() => {
      const streams = this._db.query<{ id: string; session: string }>("SELECT id, session FROM streams WHERE connection = ?", id);
      this._db.query("DELETE FROM streams WHERE connection = ?", id);
      this._db.query("DELETE FROM connections WHERE id = ?", id);
      return streams;
    });
  }

  /** Connections that said Hello, with their stream counts, least busy first. */
  ready(): ConnectionRow[] {
    return this._db.query<ConnectionRow & Record<string, never>>(
      `SELECT c.id, c.session, c.descriptor, c.max_streams, c.draining, COUNT(s.id) AS streams
       FROM connections c LEFT JOIN streams s ON s.connection = c.id
       WHERE c.descriptor IS NOT NULL GROUP BY c.id ORDER BY streams ASC, c.opened_ms DESC`,
    );
  }

  known(): boolean {
    return this._db.query("SELECT 1 AS x FROM seen").length > 0;
  }

  addStream(id: string, connection: string, session: string): void {
    this._db.query("INSERT INTO streams (id, connection, session) VALUES (?, ?, ?)", id, connection, session);
  }

  stream(id: string): { connection: string; session: string } | undefined {
    return this._db.query<{ connection: string; session: string }>("SELECT connection, session FROM streams WHERE id = ?", id)[0];
  }

  dropStream(id: string): void {
    this._db.query("DELETE FROM streams WHERE id = ?", id);
  }

  addToken(hash: string, session: string, expiresMs: number): void {
    this._db.query("INSERT INTO tokens (hash, session, expires_ms) VALUES (?, ?, ?)", hash, session, expiresMs);
  }

  /** A one-time token works once, before it expires. */
  consumeToken(hash: string, nowMs: number): string | undefined {
    return this._db.transaction(() => {
      const row = this._db.query<{ session: string; expires_ms: number }>("SELECT session, expires_ms FROM tokens WHERE hash = ?", hash)[0];
      this._db.query("DELETE FROM tokens WHERE hash = ? OR expires_ms < ?", hash, nowMs);
      return row && row.expires_ms >= nowMs ? row.session : undefined;
    });
  }
}
