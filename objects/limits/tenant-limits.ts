/**
 * Per-tenant admission limits, kept by one TenantLimiter object per tenant (docs/security.md):
 *
 * - a request rate, as a token bucket (`ratePerSecond` sustained, `burst` at once). It lives in
 *   memory: when the object is evicted the bucket starts full again, which errs on letting work in.
 * - concurrent executions, as leases in SQLite counted per session (a session runs one turn at a
 *   time). The Worker takes a lease before Exec and releases it when the turn's stream ends; a
 *   lease the Worker never released (its isolate died) expires after `leaseMs`.
 */
import { migrate, type Migrations } from "../storage/migrate.js";
import type { SqlDb } from "../storage/sql.js";

// A session may hold several leases at once (an Exec the session will refuse as busy takes one
// too); it counts once, and each caller releases only its own.
const MIGRATIONS: Migrations = [
  [`CREATE TABLE leases (session TEXT NOT NULL, owner TEXT NOT NULL, expires_ms INTEGER NOT NULL, PRIMARY KEY (session, owner))`],
];

export interface LimitSettings {
  /** Sustained requests per second; 0 turns rate limiting off. */
  ratePerSecond: number;
  burst: number;
  /** Executions running at once; 0 means no limit. */
  maxConcurrent: number;
  leaseMs: number;
}

export type Admission = { ok: true } | { ok: false; retryAfterMs: number };
export type LeaseOutcome = { ok: true } | { ok: false; running: number };

export class TenantLimits {
  private _tokens = -1;
  private _lastMs = 0;

  constructor(private readonly _db: SqlDb) {
    migrate(_db, MIGRATIONS, "limits");
  }

  /** Takes one request token, or says how long until the next one. */
  admit(s: LimitSettings, nowMs: number): Admission {
    if (s.ratePerSecond <= 0) return { ok: true };
    if (this._tokens < 0) this._tokens = s.burst;
    this._tokens = Math.min(s.burst, this._tokens + ((nowMs - this._lastMs) / 1000) * s.ratePerSecond);
    this._lastMs = nowMs;
    if (this._tokens >= 1) {
      this._tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterMs: Math.ceil(((1 - this._tokens) / s.ratePerSecond) * 1000) };
  }

  /** A lease for one Exec of `session` by `owner`; a session that already holds one is always let in. */
  acquire(s: LimitSettings, session: string, owner: string, nowMs: number): LeaseOutcome {
    return this._db.transaction(() => {
      this._db.query("DELETE FROM leases WHERE expires_ms <= ?", nowMs);
      const held = this._db.query("SELECT 1 AS one FROM leases WHERE session = ? LIMIT 1", session).length > 0;
      if (!held && s.maxConcurrent > 0) {
        const running = this.running(nowMs);
        if (running >= s.maxConcurrent) return { ok: false, running };
      }
      this._db.query("INSERT OR REPLACE INTO leases (session, owner, expires_ms) VALUES (?, ?, ?)", session, owner, nowMs + s.leaseMs);
      return { ok: true };
    });
  }

  release(session: string, owner: string): void {
    this._db.query("DELETE FROM leases WHERE session = ? AND owner = ?", session, owner);
  }

  /** Sessions with a live lease. */
  running(nowMs: number): number {
    return Number(this._db.query<{ n: number }>("SELECT COUNT(DISTINCT session) AS n FROM leases WHERE expires_ms > ?", nowMs)[0]!.n);
  }
}
