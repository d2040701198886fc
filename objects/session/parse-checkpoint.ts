/**
 * A session's latest-only parse (controller/execution-log.ts, `ExecutionLog.checkpoint`) kept in
 * SQLite between object lives. Past the memory budget, the first Approve, Resume or Cancel after
 * an object starts used to parse the whole journal to build that parse; with these rows it reads
 * one of them, the latest execution's records and what was appended since (session-cache.ts
 * `_lightLog`), and looks up an earlier execution's rows only when a record or a retried
 * decision names it.
 *
 * Rows: one per earlier execution (its first seq and flags, packed as the parse keeps them), one
 * per decision of an earlier execution (its seq: the record is read back), and one for the rest,
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
  "CREATE TABLE IF NOT EXISTS parse_earlier (execution TEXT PRIMARY KEY, packed INTEGER NOT NULL)",
  "CREATE TABLE IF NOT EXISTS parse_decisions (execution TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (execution, seq))",
];

const stmts = {
  state: "SELECT through, hash, state FROM parse_state WHERE id = 1",
  setState:
    "INSERT INTO parse_state (id, through, hash, state) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET through = excluded.through, hash = excluded.hash, state = excluded.state",
  earlier: "SELECT packed FROM parse_earlier WHERE execution = ?",
  decisions: "SELECT seq FROM parse_decisions WHERE execution = ? ORDER BY seq",
} as const;

/** Rows per multi-row INSERT: two parameters each, within a statement's 100. */
const ROWS = 50;

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
    if (!this._exist()) return undefined;
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
      if (!this._exist()) for (const sql of SCHEMA) this._db.query(sql);
      insertMany(this._db, "INSERT OR REPLACE INTO parse_earlier (execution, packed) VALUES", cp.earlier);
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
   * stored or the tables are gone (the session was deleted under the parse that asks). A storage
   * fault is thrown: an answer of none would make the parse call the journal malformed.
   */
  earlier(id: string): number | undefined {
    try {
      return this._db.query<{ packed: number }>(stmts.earlier, id)[0]?.packed;
    } catch (e) {
      if (tablesGone(e)) return undefined;
      throw e;
    }
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
    if (!this._exist()) return;
    this._db.transaction(() => {
      this._db.query("DELETE FROM parse_earlier");
      this._db.query("DELETE FROM parse_decisions");
      this._db.query("DELETE FROM parse_state");
    });
  }

  /** Whether the tables exist (looked up each time: an object's storage can be erased under it, and this runs a few times in its life). */
  private _exist(): boolean {
    return this._db.query("SELECT 1 AS one FROM sqlite_master WHERE type = 'table' AND name = 'parse_state'").length > 0;
  }
}

function tablesGone(e: unknown): boolean {
  return e instanceof Error && /no such table/i.test(e.message);
}

function insertMany(db: SqlDb, head: string, rows: readonly (readonly [string | number, string | number])[]): void {
  for (let i = 0; i < rows.length; i += ROWS) {
    const chunk = rows.slice(i, i + ROWS);
    db.query(`${head} ${chunk.map(() => "(?, ?)").join(", ")}`, ...chunk.flat());
  }
}
