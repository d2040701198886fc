/**
 * When a session tells its tenant's Directory about itself (docs/behaviour.md §4.3, docs/design.md
 * "The Directory's view of a session").
 *
 * A quiet session reports after every change, before the change answers, as it always has: a
 * caller who saw an operation end lists its new state, and the Directory anchors the new head.
 * A session in use (a change within `burstMs` of the one before: turns back to back, or a chat
 * whose next message comes within the window) instead makes its Directory row *live* once, before
 * the change writes anything, and from then on reports no change before it answers: a listing
 * asks a live row's session for its state (worker/sessions-service.ts), so it is exact, and exact
 * after a crash too, since the row was live before the first record of the burst was written.
 * The session brings the live row (and so the anchored head) up to date `refreshMs` after the
 * first change it has not reported, off that change's path.
 *
 * A live row is settled (its exact state, no longer live) by the listing that asks its session
 * once the session has been quiet for `burstMs`, or by the first change of a later instance (one
 * that did not make it live). No timer waits for the quiet end: a pending timer keeps a Durable
 * Object in memory, and billed, however idle it is. The only timer is the refresh's.
 *
 * So a change in a burst costs its caller no Directory call at all, where it cost one call and one
 * durable write of the Directory (docs/performance.md). Reports go out one at a time, in order,
 * each rendering the session as it is when it is sent.
 *
 * Plain TypeScript over a `send` function; tested in test/node/session/directory-reports.test.ts.
 * @internal
 */
import { LazyTimer } from "../lazy-timer.js";

/**
 * How close together two changes must come for the second to start a burst, and how long a
 * session must have been quiet for a listing to settle its live row: long enough to cover a chat's
 * next message or an agent's next step.
 */
export const DIRECTORY_BURST_MS = 10_000;

/** How soon after a change in a burst the live row is brought up to date (its anchored head too). */
export const DIRECTORY_REFRESH_MS = 1000;

export interface DirectoryReportDeps {
  /** Reports the session as it is now, its row live or not; rejects when the Directory did not take it. */
  send: (live: boolean) => Promise<void>;
  /** Whether an operation is running (a turn, a recovery): a listing does not settle a row under one. */
  busy: () => boolean;
  /** Whether the session still exists (a deleted one reports nothing). */
  exists: () => boolean;
  /** DIRECTORY_BURST_MS by default (0: every change reports). */
  burstMs?: number;
  /** DIRECTORY_REFRESH_MS by default, never more than `burstMs`. */
  refreshMs?: number;
}

export class DirectoryReports {
  /** This instance made the row live and has not settled it since. */
  private _live = false;
  private _lastChangeMs = Number.NEGATIVE_INFINITY;
  /** A change happened since the row was last brought up to date. */
  private _dirty = false;
  private _queue: Promise<void> = Promise.resolve();
  private readonly _timer = new LazyTimer(() => this._refresh());
  private readonly _burstMs: number;
  private readonly _refreshMs: number;

  constructor(private readonly _d: DirectoryReportDeps) {
    this._burstMs = _d.burstMs ?? DIRECTORY_BURST_MS;
    this._refreshMs = Math.min(_d.refreshMs ?? DIRECTORY_REFRESH_MS, this._burstMs);
  }

  /**
   * Epoch milliseconds, as LazyTimer keeps them (in workerd they move on between I/O events), not
   * the session's injectable clock, which tests hold still.
   */
  private _now(): number {
    return Date.now();
  }

  /** Whether the row is live as far as this instance knows (tests, and the running-turn report). */
  get live(): boolean {
    return this._live;
  }

  /**
   * Before an operation writes: a change that follows the last one within the burst window makes
   * the row live first (awaited, so a crash after the write still lists exactly). Never fails.
   */
  async beforeChange(): Promise<void> {
    if (this._live || this._now() - this._lastChangeMs >= this._burstMs) return;
    this._live = true;
    this._dirty = false;
    await this._report(true);
  }

  /**
   * After an operation changed the session: reported at once (awaited) unless the row is live, in
   * which case a refresh carries it shortly. Never fails: a missed report is repaired by the next.
   */
  async afterChange(): Promise<void> {
    this._lastChangeMs = this._now();
    if (this._live) {
      if (!this._dirty) this._timer.set(this._lastChangeMs + this._refreshMs);
      this._dirty = true;
      return;
    }
    await this._report(false);
  }

  /** A report now, whatever the row's state (a long-running turn's RUNNING), unless the row is live. */
  async refresh(): Promise<void> {
    if (!this._live) await this._report(false);
  }

  /**
   * The first report of a new session: it must be in the Directory before the session is created
   * (so it throws). It starts no burst: the usual Create then Exec is reported once per step.
   */
  async created(): Promise<void> {
    await this._enqueue(false);
  }

  /**
   * A listing asked this session for its state because its row is live. The row is settled unless
   * an operation runs or this instance's burst is still within its window: a row an earlier
   * instance left live, or a burst gone quiet, is not asked about again.
   */
  listed(): void {
    if (this._d.busy()) return;
    if (this._live && this._now() - this._lastChangeMs < this._burstMs) return;
    this._live = false;
    this._dirty = false;
    void this._report(false);
  }

  /** The storage was erased: nothing of the old session is reported again. */
  forget(): void {
    this._live = false;
    this._dirty = false;
    this._lastChangeMs = Number.NEGATIVE_INFINITY;
  }

  /** The live row brought up to date with the changes since it was last. */
  private _refresh(): void {
    if (!this._live || !this._dirty) return;
    this._dirty = false;
    if (!this._d.exists()) {
      this._live = false;
      return;
    }
    void this._report(true);
  }

  /** Sends a report after those already queued; a failure is swallowed (and a failed live mark forgotten). */
  private async _report(live: boolean): Promise<void> {
    await this._enqueue(live).catch(() => {
      if (live) this._live = false;
    });
  }

  private _enqueue(live: boolean): Promise<void> {
    const sent = this._queue.then(() => (this._d.exists() ? this._d.send(live) : undefined));
    this._queue = sent.catch(() => undefined);
    return sent;
  }
}
