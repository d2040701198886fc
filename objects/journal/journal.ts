/**
 * The hash-chained journal of one session (docs/design.md §4, docs/behaviour.md §3).
 *
 * One row per record: `events(seq, hash, fence, event)`, where `event` is the binary protobuf of
 * the normalized Event (the bytes served; a row after the first of its execution stores them
 * without the execution id and time, stored-event.ts, and every read makes them whole) and `hash` its
 * content hash as 32 bytes. A record's prev_hash is the row before's hash (genesis for seq 1), so it is not
 * stored twice; readers get both in hex, as on the wire. An append is one synchronous transaction:
 * CAS on the head, fence check, link, content hash, insert, and the caller's projections. Expected refusals come back as values, never as throws.
 *
 * The head and fence are cached in memory: this object is the only writer of its storage (one
 * Durable Object per session), and the cache is only updated after a transaction commits.
 * Used by objects/session; tested in test/node/journal/journal.test.ts.
 */
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { EventSchema, type Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { decodeBinary } from "../../proto/binary-reader.js";
import { contentDigest, GENESIS_HASH, storedForm, type ContentHash } from "../../proto/canon.js";
import { isNormalShape, normalizeEvent } from "../../proto/normalize.js";
import { ChainVerifier, type ChainReport } from "../../proto/verify.js";
import type { SqlDb, SqlValue } from "../storage/sql.js";
import { bytesOfHex, hexOf } from "../../proto/bytes.js";
import { eachPacked, packRecords, type PackedRecord } from "./record-pack.js";
import { head, type Lender, lenderOf, ShortRows, type ShortForm, shortForm, wholeOf } from "./stored-event.js";

/** Statements that created the journal's first tables: the session schema's migration 1. */
export const JOURNAL_SCHEMA_1 = [
  `CREATE TABLE events (
     seq INTEGER PRIMARY KEY,
     prev_hash TEXT NOT NULL,
     hash TEXT NOT NULL,
     fence INTEGER NOT NULL,
     event BLOB NOT NULL
   )`,
  `CREATE TABLE fence (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)`,
];

/**
 * The session schema's migration 4: hashes as 32-byte blobs and no prev_hash column (derived from
 * the row before), about 100 bytes less per record at rest. Rows are copied as they are.
 */
export const JOURNAL_PACKED_HASHES = [
  `CREATE TABLE events_packed (
     seq INTEGER PRIMARY KEY,
     hash BLOB NOT NULL,
     fence INTEGER NOT NULL,
     event BLOB NOT NULL
   )`,
  "INSERT INTO events_packed (seq, hash, fence, event) SELECT seq, unhex(hash), fence, event FROM events ORDER BY seq",
  "DROP TABLE events",
  "ALTER TABLE events_packed RENAME TO events",
];

/**
 * The session schema's migration 7: the fence row says through which seq it is the whole story.
 * An append that mints a fence no longer writes the row: the fence is in its records, and the
 * current fence is the row's, or the head record's when the head is past `through_seq` (Journal
 * `fence`). One statement and one page fewer in a turn's commit (docs/journal.md, "Fences").
 */
export const JOURNAL_FENCE_THROUGH = [
  "ALTER TABLE fence ADD COLUMN through_seq INTEGER NOT NULL DEFAULT 0",
  "UPDATE fence SET through_seq = coalesce((SELECT max(seq) FROM events), 0)",
];

/** The journal's tables as this build keeps them, for a journal outside a session (tests, benches). */
export const JOURNAL_SCHEMA = [...JOURNAL_SCHEMA_1, ...JOURNAL_PACKED_HASHES, ...JOURNAL_FENCE_THROUGH];

/** The same tables created at once, as JOURNAL_SCHEMA leaves them (a new session's: objects/session/schema.ts). */
export const JOURNAL_SCHEMA_FRESH = [
  `CREATE TABLE events (
     seq INTEGER PRIMARY KEY,
     hash BLOB NOT NULL,
     fence INTEGER NOT NULL,
     event BLOB NOT NULL
   )`,
  `CREATE TABLE fence (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL, through_seq INTEGER NOT NULL DEFAULT 0)`,
];

const stmts = {
  head: "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1",
  fence: "SELECT value, through_seq FROM fence WHERE id = 1",
  headFence: "SELECT seq, fence FROM events ORDER BY seq DESC LIMIT 1",
  setFence:
    "INSERT INTO fence (id, value, through_seq) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET value = excluded.value, through_seq = excluded.through_seq",
  range: "SELECT seq, hash, fence, event FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT ?",
} as const;

/** The whole rows short rows of a read point back at, when they are before the read's own rows. */
function wholeRowsSql(n: number): string {
  return `SELECT seq, event FROM events WHERE seq IN (${Array.from({ length: n }, () => "?").join(", ")})`;
}

/** A committed record's columns as stored (Journal.readColumns): "" is genesis, a hash its 32 bytes. */
export interface StoredColumns {
  seq: number;
  prevHash: Uint8Array | string;
  hash: Uint8Array | string;
  fence: number;
  /** The event's bytes, or what follows `eventHead` when that is set. */
  event: Uint8Array;
  /** What a short row's lender gives it (its id field, and its time when lent: stored-event.ts): the event is this, then `event`. */
  eventHead: Uint8Array | undefined;
}

/** A committed record as stored: the event is the stored bytes, verbatim. */
export interface StoredRecord {
  seq: bigint;
  prevHash: ContentHash;
  hash: ContentHash;
  fence: bigint;
  event: Uint8Array;
}

/** A record this append just wrote, with the normalized event it hashed. */
export interface AppendedRecord extends StoredRecord {
  decoded: Event;
}

export interface Head {
  seq: bigint;
  hash: ContentHash;
}

export interface AppendOptions {
  /** CAS: the head the caller expects; unset appends at the current head. */
  expectedSeq?: bigint;
  /** The writer's fence; refused when older than the current one. */
  fence: bigint;
  /** Mint a new fence (current + 1) in the same transaction and append under it; `fence` is then unused. */
  mintFence?: boolean;
  /** Runs inside the append transaction after the inserts (projections); a throw rolls back. */
  project?: (records: readonly AppendedRecord[]) => void;
}

/** An event ready to be appended: in normal form and encoded. */
export interface PreparedEvent {
  decoded: Event;
  bytes: Uint8Array;
}

export type Prepared =
  | { ok: true; events: PreparedEvent[] }
  | { ok: false; reason: "too_large"; index: number; bytes: number; limit: number }
  | { ok: false; reason: "invalid_event"; index: number; detail: string };

export type AppendResult =
  | { ok: true; records: AppendedRecord[]; fence: bigint }
  | { ok: false; reason: "conflict"; head: bigint; expected: bigint }
  | { ok: false; reason: "fenced"; current: bigint; fence: bigint }
  | { ok: false; reason: "too_large"; index: number; bytes: number; limit: number }
  | { ok: false; reason: "invalid_event"; index: number; detail: string };

/** Rows per INSERT (appends and seeding): four parameters each, at most 100 per statement. */
const SEED_ROWS = 25;
const insertStatements = new Map<number, string>();

function insertRows(n: number): string {
  let sql = insertStatements.get(n);
  if (!sql) {
    sql = `INSERT INTO events (seq, hash, fence, event) VALUES ${Array.from({ length: n }, () => "(?, ?, ?, ?)").join(", ")}`;
    insertStatements.set(n, sql);
  }
  return sql;
}

/** A row holds at most 2 MB; leave room for the other columns and the page overhead. */
export const DEFAULT_MAX_EVENT_BYTES = 1_900_000;

export class Journal {
  private _head: Head | undefined;
  private _fence: bigint | undefined;
  /** Which rows this journal stored whole, so a record of the same execution can leave its id and time out (stored-event.ts). */
  private readonly _short = new ShortRows();

  /**
   * With a `clock` (milliseconds since the epoch), every event prepared without a `ts` is stamped
   * with the time it is written: `ts` is part of the hashed event, so a record's time is as
   * tamper-evident as its content. A record that already has one (a fork's copied prefix, an
   * import) keeps it.
   */
  constructor(
    private readonly _db: SqlDb,
    private readonly _maxEventBytes = DEFAULT_MAX_EVENT_BYTES,
    private readonly _clock?: () => number,
  ) {}

  head(): Head {
    if (!this._head) {
      const row = this._db.query<{ seq: number; hash: Uint8Array }>(stmts.head)[0];
      this._head = row ? { seq: BigInt(row.seq), hash: hashHex(row.hash) } : { seq: 0n, hash: GENESIS_HASH };
    }
    return this._head;
  }

  /**
   * The current fence (0 when none was ever minted). The fence row holds it as of `through_seq`;
   * an append that minted a fence after that wrote it only in its records, and every record past
   * `through_seq` carries a fence no newer than the current one (an append under an older fence is
   * refused, one under a newer fence without minting writes the row), so the head record's fence
   * is the current one whenever it is newer than the row's.
   */
  fence(): bigint {
    if (this._fence === undefined) {
      const row = this._db.query<{ value: number; through_seq: number }>(stmts.fence)[0];
      let fence = row ? BigInt(row.value) : 0n;
      const head = this._db.query<{ seq: number; fence: number }>(stmts.headFence)[0];
      if (head && head.seq > (row?.through_seq ?? 0) && BigInt(head.fence) > fence) fence = BigInt(head.fence);
      this._fence = fence;
    }
    return this._fence;
  }

  /** Mints and returns a strictly newer fence, superseding every writer holding an older one. */
  mintFence(): bigint {
    const next = this._db.transaction(() => {
      const n = this.fence() + 1n;
      this._db.query(stmts.setFence, Number(n), Number(this.head().seq));
      return n;
    });
    this._fence = next;
    return next;
  }

  /**
   * Appends `events` in order, in one transaction, returning the committed records.
   * Nothing is written unless every event is valid and fits, the CAS holds and the fence is current.
   */
  append(events: readonly Event[], opts: AppendOptions): AppendResult {
    const p = this.prepare(events);
    return p.ok ? this.commit(p.events, opts) : p;
  }

  /**
   * Each event in normal form and encoded, checked against the size limit: what an append would
   * refuse for the events themselves, decided without touching storage. A turn prepares the
   * records it holds back until its next commit (controller/turn-writer.ts), so a record that
   * cannot be stored is refused when it is made, not later.
   */
  prepare(events: readonly Event[]): Prepared {
    const prepared: PreparedEvent[] = [];
    for (let i = 0; i < events.length; i++) {
      try {
        const input = events[i]!;
        let decoded = isNormalShape(input) ? input : normalizeEvent(input);
        // A copy: the caller's own object is never changed.
        if (this._clock && decoded.ts === undefined) decoded = { ...decoded, ts: timestampOfMs(this._clock()) };
        let stored = storedForm(decoded);
        if (stored.unknown) {
          // Unknown fields (rare: a peer's event decoded by an older schema) are not kept.
          decoded = normalizeEvent(decoded);
          stored = storedForm(decoded);
        }
        if (stored.illFormed) {
          // A lone surrogate (which UTF-8 cannot hold) was written as U+FFFD: the event journaled,
          // hashed and cached is the one those bytes decode to, as every reader will decode it,
          // encoded again (map keys that became equal are one entry now).
          decoded = decodeBinary(EventSchema, stored.bytes);
          stored = storedForm(decoded);
        }
        const bytes = stored.bytes;
        if (bytes.length > this._maxEventBytes) {
          return { ok: false, reason: "too_large", index: i, bytes: bytes.length, limit: this._maxEventBytes };
        }
        prepared.push({ decoded, bytes });
      } catch (e) {
        return { ok: false, reason: "invalid_event", index: i, detail: errorText(e) };
      }
    }
    return { ok: true, events: prepared };
  }

  /** Appends prepared events in order, in one transaction (CAS, fence, link, hash, insert). */
  commit(events: readonly PreparedEvent[], opts: AppendOptions): AppendResult {
    const hashes: ContentHash[] = new Array(events.length);
    const digests: Uint8Array<ArrayBuffer>[] = new Array(events.length);
    let result: AppendResult;
    try {
      result = this._db.transaction((): AppendResult => {
        const head = this.head();
        if (opts.expectedSeq !== undefined && opts.expectedSeq !== head.seq) {
          return { ok: false, reason: "conflict", head: head.seq, expected: opts.expectedSeq };
        }
        const current = this.fence();
        if (!opts.mintFence && opts.fence < current) return { ok: false, reason: "fenced", current, fence: opts.fence };
        const fence = opts.mintFence ? current + 1n : opts.fence;
        // Hash every record before the first insert, so a refusal never leaves a partial batch.
        let prev = head.hash;
        for (let i = 0; i < events.length; i++) {
          try {
            const d = contentDigest(events[i]!.decoded, prev, head.seq + BigInt(i + 1));
            hashes[i] = d.hash;
            digests[i] = d.bytes as Uint8Array<ArrayBuffer>;
          } catch (e) {
            return { ok: false, reason: "invalid_event", index: i, detail: errorText(e) };
          }
          prev = hashes[i]!;
        }
        // A minted fence is stored in the records it is appended with (see `fence`); the row
        // is written when there are none, and when records carry a fence newer than the current
        // one without minting it, so that the row stays the current fence's source.
        if ((opts.mintFence && events.length === 0) || (!opts.mintFence && fence > current)) {
          this._db.query(stmts.setFence, Number(opts.mintFence ? fence : current), Number(head.seq) + events.length);
        }
        const records: AppendedRecord[] = [];
        prev = head.hash;
        let seq = head.seq;
        // One statement per SEED_ROWS records: a turn's records commit in one or two.
        let params: (number | Uint8Array)[] = [];
        for (let i = 0; i < events.length; i++) {
          const p = events[i]!;
          seq += 1n;
          params.push(Number(seq), digests[i]!, Number(fence), this._short.stored(Number(seq), p.bytes));
          if (params.length === SEED_ROWS * 4 || i === events.length - 1) {
            this._db.query(insertRows(params.length / 4), ...params);
            params = [];
          }
          records.push({ seq, prevHash: prev, hash: hashes[i]!, fence, event: p.bytes, decoded: p.decoded });
          prev = hashes[i]!;
        }
        opts.project?.(records);
        return { ok: true, records, fence };
      });
    } catch (e) {
      // Rolled back: forget cached state rather than guess what survived.
      this._head = undefined;
      this._fence = undefined;
      this._short.forget();
      throw e;
    }
    if (result.ok) {
      const last = result.records[result.records.length - 1];
      if (last) this._head = { seq: last.seq, hash: last.hash };
      if (opts.mintFence) this._fence = result.fence;
    }
    return result;
  }

  /**
   * Copies records verbatim (same seq, prev_hash, hash, event bytes) into an empty journal: the
   * prefix of a fork child. Links are checked; hashes are trusted because they were checked when
   * the parent wrote them and any verifier recomputes them. (A fork packs them: `seedPacked`.)
   */
  seed(
    records: readonly StoredRecord[],
    project?: (records: readonly { seq: bigint; event: Uint8Array }[]) => void,
  ): { ok: true } | { ok: false; reason: "broken_link"; seq: bigint } {
    const r = this.seedPacked(packRecords(records), project);
    return r.ok ? { ok: true } : r;
  }

  /**
   * Stores records packed by record-pack.ts from the pack's own bytes, after the head: nothing is
   * unpacked into records, hashes stay bytes and only the new head's is made hex. Every record
   * must follow the one before it (its seq next, its prev_hash that record's hash, the first's
   * the head's), or nothing is stored. `project` gets each record's seq and event bytes, in the
   * same transaction.
   */
  seedPacked(
    pack: Uint8Array,
    project?: (records: readonly { seq: bigint; event: Uint8Array }[]) => void,
  ): { ok: true; records: number } | { ok: false; reason: "broken_link"; seq: bigint } {
    const head = this.head();
    const rows: PackedRecord[] = [];
    let expected = Number(head.seq) + 1;
    let prev: Uint8Array | undefined = head.seq === 0n ? undefined : bytesOfHex(head.hash);
    let broken: number | undefined;
    eachPacked(pack, (r) => {
      if (broken !== undefined) return;
      if (r.seq !== expected || !sameHash(r.prevHash, prev)) broken = r.seq;
      else {
        rows.push(r);
        expected++;
        prev = r.hash;
      }
    });
    if (broken !== undefined) return { ok: false, reason: "broken_link", seq: BigInt(broken) };
    if (rows.length === 0) return { ok: true, records: 0 };
    // Seeded records carry the fences they were written under elsewhere: the row is the current
    // fence's source through them (see `fence`).
    const current = this.fence();
    try {
      this._db.transaction(() => {
        for (let i = 0; i < rows.length; i += SEED_ROWS) {
          const n = Math.min(SEED_ROWS, rows.length - i);
          const params: (number | Uint8Array)[] = new Array(n * 4);
          for (let k = 0; k < n; k++) {
            const r = rows[i + k]!;
            params[4 * k] = r.seq;
            params[4 * k + 1] = r.hash;
            params[4 * k + 2] = r.fence;
            params[4 * k + 3] = this._short.stored(r.seq, r.event);
          }
          this._db.query(insertRows(n), ...params);
        }
        this._db.query(stmts.setFence, Number(current), rows[rows.length - 1]!.seq);
        project?.(rows.map((r) => ({ seq: BigInt(r.seq), event: r.event })));
      });
    } catch (e) {
      this._head = undefined;
      this._fence = undefined;
      this._short.forget();
      throw e;
    }
    const last = rows[rows.length - 1]!;
    this._head = { seq: BigInt(last.seq), hash: hashHex(last.hash) };
    return { ok: true, records: rows.length };
  }

  /** Records with from <= seq <= to (to = 0 means head), at most `limit`, verbatim. */
  read(from: bigint, to: bigint, limit: number): StoredRecord[] {
    const page = this._page(from, to, limit);
    if (!page) return [];
    const { rows, first } = page;
    let prev = page.prev === "" ? GENESIS_HASH : hashHex(page.prev);
    const out: StoredRecord[] = new Array(rows.length - first);
    for (let i = first; i < rows.length; i++) {
      const r = rows[i]!;
      const hash = hashHex(r[1] as Uint8Array | string);
      out[i - first] = { seq: BigInt(r[0] as number), prevHash: prev, hash, fence: BigInt(r[2] as number), event: r[3] as Uint8Array };
      prev = hash;
    }
    return out;
  }

  /**
   * The records `read` gives, as the columns a LogRecord is written from (Replay's envelopes,
   * proto/record-envelopes.ts): hashes as their stored 32 bytes, never made into text here (a row
   * written by hand may hold text: it is what it says), seq and fence as numbers, and a short
   * row's event in its two parts, which the envelope writes one after the other (no copy).
   */
  readColumns(from: bigint, to: bigint, limit: number): StoredColumns[] {
    const page = this._page(from, to, limit, false);
    if (!page) return [];
    const { rows, heads, first } = page;
    let prev = page.prev;
    const out: StoredColumns[] = new Array(rows.length - first);
    for (let i = first; i < rows.length; i++) {
      const r = rows[i]!;
      const hash = r[1] as Uint8Array | string;
      out[i - first] = {
        seq: r[0] as number,
        prevHash: prev,
        hash,
        fence: r[2] as number,
        event: r[3] as Uint8Array,
        eventHead: heads?.[i],
      };
      prev = hash;
    }
    return out;
  }

  /**
   * The rows (seq, hash, fence, event) of a read, from index `first`, and the stored hash of the
   * record before them ("" for genesis). When the row before the range is missing (a journal with a
   * gap), the first row links to genesis, which a verifier then refuses.
   */
  private _page(
    from: bigint,
    to: bigint,
    limit: number,
    join = true,
  ): { rows: SqlValue[][]; heads: (Uint8Array | undefined)[] | undefined; first: number; prev: Uint8Array | string } | undefined {
    const lo = from < 1n ? 1n : from;
    const hi = to <= 0n ? this.head().seq : to;
    if (hi < lo || limit <= 0) return undefined;
    // The row before the first gives its prev_hash.
    const rows = this._db.queryRows(stmts.range, Number(lo - 1n), Number(hi), lo === 1n ? limit : limit + 1);
    const heads = this._makeWhole(rows, join);
    if (lo === 1n) return { rows, heads, first: 0, prev: "" };
    const before = rows[0];
    if (before === undefined || before[0] !== Number(lo - 1n)) return { rows, heads, first: 0, prev: "" };
    return { rows, heads, first: 1, prev: before[1] as Uint8Array | string };
  }

  /**
   * Gives each short row of a read (stored-event.ts) what its lender gives it: the lender is one of
   * the read's own rows, or else read in one more statement (a read that starts inside an
   * execution). `join`: the event made whole in column 3. Otherwise column 3 keeps the rest (a
   * view) and the returned array, by row, what comes before it, made once per lender and time
   * offset. A short row whose lender cannot give it that stays as it is stored.
   */
  private _makeWhole(rows: SqlValue[][], join: boolean): (Uint8Array | undefined)[] | undefined {
    const base = rows.length > 0 ? (rows[0]![0] as number) : 0;
    // Rows stored short: they lend nothing, even once made whole.
    let short: Uint8Array | undefined;
    let heads: (Uint8Array | undefined)[] | undefined;
    let outside: [number, ShortForm][] | undefined;
    // Replay's heads: one per lender and time offset (a commit's records share their time).
    let headOf: Lender | undefined;
    let headDelta = 0;
    let headTime = false;
    let lastHead: Uint8Array | undefined;
    const lend = (i: number, form: ShortForm, lender: Lender | undefined): void => {
      if (lender === undefined) return;
      const row = rows[i]!;
      if (join) {
        const whole = wholeOf(row[3] as Uint8Array, form, lender);
        if (whole !== undefined) row[3] = whole;
        return;
      }
      if (lender !== headOf || form.delta !== headDelta || form.lendsTime !== headTime) {
        headOf = lender;
        headDelta = form.delta;
        headTime = form.lendsTime;
        lastHead = head(form, lender);
      }
      if (lastHead === undefined) return;
      row[3] = (row[3] as Uint8Array).subarray(form.rest);
      (heads ??= new Array<Uint8Array | undefined>(rows.length))[i] = lastHead;
    };
    // The last lender, read once for the run of rows that point at it.
    let lenderAt = -1;
    let lender: Lender | undefined;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const stored = row[3];
      if (!(stored instanceof Uint8Array) || stored[0]! > 1) continue;
      const form = shortForm(stored);
      if (form === undefined) continue;
      (short ??= new Uint8Array(rows.length))[i] = 1;
      const at = (row[0] as number) - form.distance;
      const j = at - base;
      if (j >= 0 && j < i && rows[j]![0] === at) {
        if (short[j] === 1) continue;
        if (j !== lenderAt) {
          lenderAt = j;
          lender = lenderOf(rows[j]![3] as Uint8Array);
        }
        lend(i, form, lender);
      } else (outside ??= []).push([i, form]);
    }
    if (!outside) return heads;
    const lenders = new Map<number, Uint8Array>();
    const at = ([i, form]: [number, ShortForm]) => (rows[i]![0] as number) - form.distance;
    const seqs = [...new Set(outside.map(at))];
    for (let k = 0; k < seqs.length; k += 99) {
      const chunk = seqs.slice(k, k + 99);
      for (const r of this._db.queryRows(wholeRowsSql(chunk.length), ...chunk)) lenders.set(r[0] as number, r[1] as Uint8Array);
    }
    for (const o of outside) {
      const whole = lenders.get(at(o));
      lend(o[0], o[1], whole && lenderOf(whole));
    }
    return heads;
  }

  /** Walks the whole chain from seq 1, recomputing every hash; never writes. */
  verify(pageSize = 512): ChainReport {
    const v = new ChainVerifier();
    let from = 1n;
    for (;;) {
      const page = this.read(from, 0n, pageSize);
      for (const r of page) v.push(r);
      if (page.length < pageSize) break;
      from = page[page.length - 1]!.seq + 1n;
    }
    return v.report();
  }
}

/** Both genesis (undefined), or the same 32 bytes. */
function sameHash(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A stored hash in its wire form: 64 lowercase hex characters. */
function hashHex(b: Uint8Array | string): ContentHash {
  // A row written by hand (a test tampering with storage) may hold text; it is what it says.
  return (typeof b === "string" ? b : hexOf(b)) as ContentHash;
}

/** A Timestamp of a time in milliseconds, as timestampFromMs makes it (without create()'s reflection). */
function timestampOfMs(ms: number): Timestamp {
  const seconds = Math.floor(ms / 1000);
  return { $typeName: "google.protobuf.Timestamp", seconds: BigInt(seconds), nanos: (ms - seconds * 1000) * 1000000 };
}
