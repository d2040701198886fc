/**
 * A session's latest-only parse (controller/execution-log.ts, `ExecutionLog.checkpoint`) kept in
 * SQLite between object lives. Past the memory budget, the first Approve, Resume or Cancel after
 * an object starts used to parse the whole journal to build that parse; with these rows it reads
 * one of them, the latest execution's records and what was appended since (session-cache.ts
 * `_lightLog`), and looks up an earlier execution's rows only when a record or a retried
 * decision names it.
 *
 * Rows: one per earlier execution (its first seq and flags, keyed by a 53-bit hash of its id,
 * `executionKey`: about 19 bytes a row where the id itself took 97, since every session of 256
 * records or more keeps these rows), one per decision of an earlier execution (its seq: the record
 * is read back), and one for the rest,
 * as JSON, with the seq and hash of the record the checkpoint was taken after. The hash chain makes
 * that hash a check of every record up to it: rows whose record no longer has it (a journal
 * replaced underneath) are dropped, and the parse is built from the journal again. Written in one
 * transaction, with only the rows that changed since the last checkpoint; the first creates the
 * tables (`SCHEMA`). Tested in test/node/session/session-cache.test.ts.
 */
import type { LogCheckpoint, OpenGate } from "../controller/execution-log.js";
import type { SqlDb } from "../storage/sql.js";

/**
 * The tables, created by the first checkpoint a session stores rather than by a migration: few
 * sessions ever outgrow the memory budget, and three more tables in every new session's storage
 * cost a fork of 128 children about a fifth of its speed (`npm run bench`'s fork row).
 */
const SCHEMA = [
  "CREATE TABLE IF NOT EXISTS parse_state (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL, hash TEXT NOT NULL, state TEXT NOT NULL)",
  // Two executions whose ids share a key are two rows; a lookup checks each against the journal.
  "CREATE TABLE IF NOT EXISTS parse_executions (key INTEGER NOT NULL, first INTEGER NOT NULL, flags INTEGER NOT NULL, PRIMARY KEY (key, first)) WITHOUT ROWID",
  "CREATE TABLE IF NOT EXISTS parse_decisions (execution TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (execution, seq))",
];

/** The per-execution table of the build before keys (execution TEXT PRIMARY KEY, packed): its rows are dropped. */
const OLD_TABLE = "parse_earlier";

const stmts = {
  tables: "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('parse_state', 'parse_executions', 'parse_earlier')",
  state: "SELECT through, hash, state FROM parse_state WHERE id = 1",
  setState:
    "INSERT INTO parse_state (id, through, hash, state) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET through = excluded.through, hash = excluded.hash, state = excluded.state",
  earlier: "SELECT first, flags FROM parse_executions WHERE key = ?",
  decisions: "SELECT seq FROM parse_decisions WHERE execution = ? ORDER BY seq",
} as const;

/** Statement parameters at most: within a statement's 100. */
const PARAMS = 99;

/**
 * A 53-bit key for an execution id (two 32-bit FNV-1a hashes with different offsets, one cut to
 * 21 bits), an exact integer in JavaScript and SQLite. Not unique: the rows it keys are checked
 * against the journal (`earlier`).
 */
export function executionKey(id: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  return (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
}

/** The checkpoint as stored: earlier executions and their decisions are looked up one at a time (`earlier`, `decisions`). */
export interface StoredCheckpoint extends Omit<LogCheckpoint, "earlier" | "decisions"> {
  /** The hash (hex) of the record at `through`. */
  hash: string;
}

/** The JSON row: bigints as decimal strings. */
interface StateJson {
  index: number;
  lastForkSeq: string;
  bad?: { seq: string; detail: string };
  gates: [string, { callId: string; callSeq: string; next: number }][];
  latest?: { id: string; firstSeq: string };
}

/** A stored checkpoint row this build cannot read: the rows are to be dropped, not the operation failed. */
export class UnreadableCheckpointError extends Error {}

export class ParseCheckpoints {
  constructor(private readonly _db: SqlDb) {}

  /**
   * The stored checkpoint, or undefined when there is none. Throws UnreadableCheckpointError on a
   * row this build cannot read; a storage fault is thrown as it is.
   */
  read(): StoredCheckpoint | undefined {
    const tables = this._tables();
    if (tables.has(OLD_TABLE)) {
      // Rows of the build before keys: dropped, and the next checkpoint stores every row again.
      this.clear();
      return undefined;
    }
    if (!tables.has("parse_state")) return undefined;
    const row = this._db.query<{ through: number; hash: string; state: string }>(stmts.state)[0];
    if (!row) return undefined;
    try {
      const s = JSON.parse(row.state) as StateJson;
      return {
        through: BigInt(row.through),
        hash: row.hash,
        index: s.index,
        lastForkSeq: BigInt(s.lastForkSeq),
        bad: s.bad && { seq: BigInt(s.bad.seq), detail: s.bad.detail },
        gates: s.gates.map(([id, g]) => [id, { callId: g.callId, callSeq: BigInt(g.callSeq), next: g.next as OpenGate["next"] }]),
        latest: s.latest && { id: s.latest.id, firstSeq: BigInt(s.latest.firstSeq) },
      };
    } catch (e) {
      throw new UnreadableCheckpointError(`the stored parse checkpoint cannot be read: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /**
   * Stores `cp`, taken after the record whose hash is `hash`, over the rows stored: the rows of a
   * checkpoint are what changed since the one before (ExecutionLog.checkpoint).
   */
  write(cp: LogCheckpoint, hash: string): void {
    const state: StateJson = {
      index: cp.index,
      lastForkSeq: String(cp.lastForkSeq),
      bad: cp.bad && { seq: String(cp.bad.seq), detail: cp.bad.detail },
      gates: cp.gates.map(([id, g]) => [id, { callId: g.callId, callSeq: String(g.callSeq), next: g.next }]),
      latest: cp.latest && { id: cp.latest.id, firstSeq: String(cp.latest.firstSeq) },
    };
    this._db.transaction(() => {
      if (!this._tables().has("parse_executions")) for (const sql of SCHEMA) this._db.query(sql);
      insertMany(
        this._db,
        "INSERT OR REPLACE INTO parse_executions (key, first, flags) VALUES",
        cp.earlier.map(([id, packed]) => [executionKey(id), Math.floor(packed / 4), packed % 4]),
      );
      insertMany(
        this._db,
        "INSERT OR REPLACE INTO parse_decisions (execution, seq) VALUES",
        cp.decisions.map(([id, seq]) => [id, Number(seq)]),
      );
      this._db.query(stmts.setState, Number(cp.through), hash, JSON.stringify(state));
    });
  }

  /**
   * The stored entry of an earlier execution (`firstSeq * 4 + flags`), undefined when none is
   * stored or the tables are gone (the session was deleted under the parse that asks). A row of
   * its key counts only if `idAt` (the journal) says the record at its first seq is of `id`. A
   * storage fault is thrown: an answer of none would make the parse call the journal malformed.
   */
  earlier(id: string, idAt: (seq: bigint) => string | undefined): number | undefined {
    let rows: { first: number; flags: number }[];
    try {
      rows = this._db.query<{ first: number; flags: number }>(stmts.earlier, executionKey(id));
    } catch (e) {
      if (tablesGone(e)) return undefined;
      throw e;
    }
    for (const r of rows) if (idAt(BigInt(r.first)) === id) return r.first * 4 + r.flags;
    return undefined;
  }

  /** The seqs of an earlier execution's stored decisions, in order; none when the tables are gone. */
  decisions(id: string): bigint[] {
    try {
      return this._db.queryRows(stmts.decisions, id).map((r) => BigInt(r[0] as number));
    } catch (e) {
      if (tablesGone(e)) return [];
      throw e;
    }
  }

  /** Drops every row: the journal they describe is gone, or they cannot be used. */
  clear(): void {
    const tables = this._tables();
    if (tables.size === 0) return;
    this._db.transaction(() => {
      if (tables.has(OLD_TABLE)) this._db.query(`DROP TABLE ${OLD_TABLE}`);
      if (tables.has("parse_executions")) this._db.query("DELETE FROM parse_executions");
      if (tables.has("parse_state")) {
        this._db.query("DELETE FROM parse_decisions");
        this._db.query("DELETE FROM parse_state");
      }
    });
  }

  /** Which of the tables exist (looked up each time: an object's storage can be erased under it, and this runs a few times in its life). */
  private _tables(): Set<string> {
    return new Set(this._db.query<{ name: string }>(stmts.tables).map((r) => r.name));
  }
}

function tablesGone(e: unknown): boolean {
  return e instanceof Error && /no such table/i.test(e.message);
}

function insertMany(db: SqlDb, head: string, rows: readonly (readonly (string | number)[])[]): void {
  const width = rows[0]?.length ?? 1;
  const per = Math.floor(PARAMS / width);
  const row = `(${Array.from({ length: width }, () => "?").join(", ")})`;
  for (let i = 0; i < rows.length; i += per) {
    const chunk = rows.slice(i, i + per);
    db.query(`${head} ${chunk.map(() => row).join(", ")}`, ...chunk.flat());
  }
}
