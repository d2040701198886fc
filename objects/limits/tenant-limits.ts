/**
 * Per-tenant admission limits, kept by one TenantLimiter object per tenant (docs/security.md):
 *
 * - a request rate, as a token bucket (`ratePerSecond` sustained, `burst` at once). It lives in
 *   memory: when the object is evicted the bucket starts full again, which errs on letting work in.
 * - concurrent executions, as one row per running session in SQLite. The session object that runs
 *   a turn takes the row (its owner names that object's instance and turn) and gives it back when
 *   the turn ends. A row can outlive its turn only when the session object died mid-turn (a crash,
 *   a deploy); such a row must never keep the tenant out, so when the tenant is at its limit every
 *   row not vouched for in the last RECHECK_MS is put to its session object, which alone knows whether
 *   that turn still runs (`isRunning`), and the rows it disowns are dropped before counting again.
 *   The table holds at most the tenant's limit of rows (plus the stale ones), so this is bounded.
 *   Nothing expires by time: a turn that runs for hours keeps counting.
 *
 * Giving a row back writes nothing: it is forgotten in memory and deleted with the next acquire's
 * write, in the same commit, so a turn costs the limiter one commit, not two. A limiter that is
 * evicted meanwhile forgets that the row was given back; the row then reads as a turn that died
 * with its object, which the reconciliation above drops (its object says it does not run it).
 *
 * A session may keep its row after its turn, for its next turn to start without asking (`keep`;
 * objects/session/state.ts). A kept row still counts: the session can start a turn on it at any
 * moment. The limiter asks about it like any other at the limit, and, once it has been kept
 * KEEP_ASK_MS, beside the next acquire, so rows of sessions that went quiet do not pile up; a
 * session asked about a kept slot gives it up (its next turn asks again). A session keeps its row
 * only while the tenant runs at most half its limit, so while it runs more, kept rows cost other
 * sessions theirs: every turn of those asks and gives back. Then a row is asked about once it has
 * been kept KEEP_ASK_BUSY_MS, and the rows of sessions that went quiet make room within a second.
 *
 * Tested in test/node/limits/tenant-limits.test.ts (sql.js, fake clock) and against a killed
 * `wrangler dev` in test/node/integration/leases.test.ts.
 */
import { migrate, type Migrations } from "../storage/migrate.js";
import type { SqlDb } from "../storage/sql.js";

const MIGRATIONS: Migrations = [
  [`CREATE TABLE leases (session TEXT NOT NULL, owner TEXT NOT NULL, expires_ms INTEGER NOT NULL, PRIMARY KEY (session, owner))`],
  // 2: one row per running session, owned by the session object's turn; no expiry (see above).
  ["DROP TABLE leases", `CREATE TABLE running (session TEXT PRIMARY KEY, owner TEXT NOT NULL, since_ms INTEGER NOT NULL)`],
];

const stmts = {
  count: "SELECT COUNT(*) AS n FROM running",
  owner: "SELECT owner FROM running WHERE session = ?",
  take: `INSERT INTO running (session, owner, since_ms) VALUES (?, ?, ?)
         ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, since_ms = excluded.since_ms`,
  release: "DELETE FROM running WHERE session = ? AND owner = ?",
  all: "SELECT session, owner FROM running",
} as const;

/** How often, at most, one row is put to its session object while the tenant is at its limit. */
export const RECHECK_MS = 2_000;

/** How long a kept row (`keep`) stays before the next acquire puts it to its session object. */
export const KEEP_ASK_MS = 30_000;

/** The same while the tenant runs more than half its limit, where sessions no longer keep rows. */
export const KEEP_ASK_BUSY_MS = 1_000;

/**
 * Whether a session keeps its row after a turn (`keep`), with `running` rows counted (its own
 * included) against `limit`: only while the tenant runs at most half its limit, never without one.
 */
export function keepsRows(running: number, limit: number): boolean {
  return limit > 0 && running * 2 <= limit;
}

export interface LimitSettings {
  /** Sustained requests per second; 0 turns rate limiting off. */
  ratePerSecond: number;
  burst: number;
  /** Executions running at once; 0 means no limit. */
  maxConcurrent: number;
}

/** Tokens taken (at least one, at most the number asked for), or how long until the next one. */
export type Admission = { ok: true; granted: number } | { ok: false; retryAfterMs: number };
/** A lease taken (with how many the tenant now runs, this one included), or refused at the limit. */
export type LeaseOutcome = { ok: true; running: number } | { ok: false; running: number };

/** Asks a session object whether `owner`'s turn still runs there (false when the object restarted). */
export type IsRunning = (session: string, owner: string) => Promise<boolean>;

export class TenantLimits {
  private _tokens = -1;
  private _lastMs = 0;
  /**
   * When each row was last vouched for by its session object. In memory on purpose: after a host
   * restart (when rows are most likely stale) every row is put to its object again at once.
   */
  private readonly _vouched = new Map<string, number>();
  /** Rows given back and not yet deleted (deleted by the next acquire): session → owner. */
  private readonly _released = new Map<string, string>();
  /** Rows their session keeps between turns (`keep`): session → owner and since when. */
  private readonly _kept = new Map<string, { owner: string; sinceMs: number }>();

  constructor(private readonly _db: SqlDb) {
    migrate(_db, MIGRATIONS, "limits");
  }

  /**
   * Takes up to `want` request tokens (as many as the bucket holds, at least one), or says how long
   * until the next one. A Worker isolate takes several ahead of use (worker/rate-tokens.ts).
   */
  admit(s: LimitSettings, nowMs: number, want = 1): Admission {
    if (s.ratePerSecond <= 0) return { ok: true, granted: want };
    if (this._tokens < 0) this._tokens = s.burst;
    this._tokens = Math.min(s.burst, this._tokens + ((nowMs - this._lastMs) / 1000) * s.ratePerSecond);
    this._lastMs = nowMs;
    if (this._tokens >= 1) {
      const granted = Math.max(1, Math.min(Math.floor(want), Math.floor(this._tokens)));
      this._tokens -= granted;
      return { ok: true, granted };
    }
    return { ok: false, retryAfterMs: Math.ceil(((1 - this._tokens) / s.ratePerSecond) * 1000) };
  }

  /**
   * Counts `session` as running under `owner`. A session that already has a row is always let in
   * (it counts once; the new owner replaces the old, which is how a recovery after a crash takes
   * over its own session). At the limit, stale rows are reconciled first (see the header).
   */
  async acquire(s: LimitSettings, session: string, owner: string, nowMs: number, isRunning: IsRunning): Promise<LeaseOutcome> {
    this._flushReleased();
    if (this._tryTake(s, session, owner, nowMs)) {
      const running = this.running();
      // Without a limit no session keeps a row, so there is nothing to ask about either way.
      this._askKept(nowMs, isRunning, keepsRows(running, s.maxConcurrent) ? KEEP_ASK_MS : KEEP_ASK_BUSY_MS);
      return { ok: true, running };
    }
    await this._reconcile(nowMs, isRunning);
    this._flushReleased();
    // Counted and taken with no await in between: two acquires cannot both pass the last slot.
    if (this._tryTake(s, session, owner, nowMs)) return { ok: true, running: this.running() };
    return { ok: false, running: this.running() };
  }

  /** Gives the row back, if `owner` still holds it (a newer owner's row is left alone). */
  release(session: string, owner: string): void {
    this._vouched.delete(`${session}\0${owner}`);
    this._forgetKept(session, owner);
    const held = this._db.query<{ owner: string }>(stmts.owner, session)[0];
    if (held?.owner === owner) this._released.set(session, owner);
  }

  /**
   * Notes that `session` keeps `owner`'s row after its turn, for its next turn (see the header):
   * the row still counts, and is put to the session once it has been kept KEEP_ASK_MS.
   */
  keep(session: string, owner: string, nowMs: number): void {
    const held = this._db.query<{ owner: string }>(stmts.owner, session)[0];
    if (held?.owner === owner && this._released.get(session) !== owner) this._kept.set(session, { owner, sinceMs: nowMs });
  }

  /** Rows kept between turns that the limiter has not yet put to their sessions (tests). */
  get kept(): number {
    return this._kept.size;
  }

  private _forgetKept(session: string, owner: string): void {
    if (this._kept.get(session)?.owner === owner) this._kept.delete(session);
  }

  /**
   * Puts each row kept `afterMs` or longer to its session, beside the acquire that found it (not
   * awaited): one the session no longer keeps or runs is dropped; one it runs a turn on again
   * counts on as a running turn's row.
   */
  private _askKept(nowMs: number, isRunning: IsRunning, afterMs: number): void {
    for (const [session, k] of this._kept) {
      if (nowMs - k.sinceMs < afterMs) continue;
      this._kept.delete(session);
      void isRunning(session, k.owner).then(
        (running) => {
          if (running) this._vouched.set(`${session}\0${k.owner}`, nowMs);
          else {
            // Keyed on the owner: a row a newer turn took meanwhile is left alone. A row given back
            // meanwhile is gone now, so it must not also be subtracted as given back.
            this._db.query(stmts.release, session, k.owner);
            if (this._released.get(session) === k.owner) this._released.delete(session);
          }
        },
        // An object that cannot answer keeps its row counted, as at the limit.
        () => undefined,
      );
    }
  }

  /** Sessions counted as running. */
  running(): number {
    return Number(this._db.query<{ n: number }>(stmts.count)[0]!.n) - this._released.size;
  }

  /** Deletes the rows given back since the last acquire (keyed on the owner: a newer one stays). */
  private _flushReleased(): void {
    for (const [session, owner] of this._released) this._db.query(stmts.release, session, owner);
    this._released.clear();
  }

  private _tryTake(s: LimitSettings, session: string, owner: string, nowMs: number): boolean {
    const held = this._db.query(stmts.owner, session).length > 0;
    if (!held && s.maxConcurrent > 0 && this.running() >= s.maxConcurrent) return false;
    this._db.query(stmts.take, session, owner, nowMs);
    // A new owner replaces the row, kept or not.
    if (this._kept.get(session)?.owner !== owner) this._kept.delete(session);
    return true;
  }

  /** Puts every row not vouched for lately to its session object; drops the rows nobody runs. */
  private async _reconcile(nowMs: number, isRunning: IsRunning): Promise<void> {
    const key = (r: { session: string; owner: string }) => `${r.session}\0${r.owner}`;
    const rows = this._db.query<{ session: string; owner: string }>(stmts.all).filter((r) => nowMs - (this._vouched.get(key(r)) ?? -Infinity) >= RECHECK_MS);
    const answers = await Promise.all(
      rows.map((r) =>
        isRunning(r.session, r.owner).then(
          (running) => ({ ...r, running }),
          // An object that cannot answer now is counted: a limit must not open up on an error.
          () => ({ ...r, running: true }),
        ),
      ),
    );
    for (const a of answers) {
      this._forgetKept(a.session, a.owner);
      if (a.running) this._vouched.set(key(a), nowMs);
      else {
        // Keyed on the owner too: a row a newer turn took meanwhile is left alone.
        this._vouched.delete(key(a));
        this._db.query(stmts.release, a.session, a.owner);
      }
    }
  }
}
