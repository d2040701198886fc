/**
 * Request tokens a Worker isolate takes from a tenant's limiter ahead of use (docs/security.md
 * "Tokens taken ahead"), so that a busy tenant's requests do not each cost a limiter call.
 *
 * The limiter deducts every token it hands out, so taking ahead never lets more requests in than
 * the bucket allows: a token that is not used within `GRANT_LIFE_MS` is dropped, which errs on
 * refusing, never on admitting. The number asked for adapts to what the isolate uses: it starts
 * at one, doubles each time a grant ran out while still fresh, halves when one expired unused, and
 * never passes `maxGrant(rate)` (a tenth of a second of the rate, at most 32), so what one isolate
 * can hold back from the tenant's others is small. A quiet or rate-limited tenant asks for one at a
 * time, exactly as without this. Concurrent requests share one call in flight.
 *
 * With a reserve (`reserveLifeMs`, on in the Worker), the isolate also keeps one counted token per
 * tenant for up to that long, taken only when the limiter granted all it was asked (the bucket had
 * room). A request that finds no fresh grant spends the reserve and is let in at once, and the
 * limiter is asked again beside it, to fill the reserve and the grant for what follows. So the
 * first request after a pause (a user's next turn) does not wait for the limiter; it still costs
 * one limiter call, off its path. A rate below 20/s (grants of one) keeps no reserve.
 * Test: test/node/limits/rate-tokens.test.ts.
 */

/** How long a grant's tokens stay usable in the isolate that took them. */
export const GRANT_LIFE_MS = 1_000;
const MOST_PER_GRANT = 32;
/**
 * How long the Worker's reserve token stays usable: long enough to cover the pause before a
 * user's next turn, so that turn does not wait for the limiter.
 */
export const RESERVE_LIFE_MS = 60_000;

/** The largest grant for a rate: a tenth of a second of it, between 1 and 32 tokens. */
export function maxGrant(ratePerSecond: number): number {
  return Math.max(1, Math.min(MOST_PER_GRANT, Math.floor(ratePerSecond / 10)));
}

/** What the limiter answered: `granted` tokens (at least 1, at most the number asked for), or a refusal. */
export type Take = { ok: true; granted: number } | { ok: false; retryAfterMs: number };

interface Grant {
  left: number;
  size: number;
  untilMs: number;
}

export interface RateTokenOptions {
  /** How long the one reserve token may wait for its request after the limiter counted it; 0 keeps none. */
  reserveLifeMs?: number;
}

export class RateTokens {
  private readonly _grants = new Map<string, Grant>();
  private readonly _inFlight = new Map<string, Promise<Take>>();
  /** Per tenant: until when its reserve token may be spent. */
  private readonly _reserves = new Map<string, number>();
  private readonly _reserveLifeMs: number;

  constructor(
    private readonly _take: (tenant: string, want: number) => Promise<Take>,
    private readonly _ratePerSecond: number,
    private readonly _now: () => number = Date.now,
    options: RateTokenOptions = {},
  ) {
    this._reserveLifeMs = maxGrant(_ratePerSecond) > 1 ? (options.reserveLifeMs ?? 0) : 0;
  }

  /**
   * Spends one of the tenant's tokens: undefined when admitted, else the milliseconds until the
   * next one. `waitUntil` keeps a limiter call this admission starts beside its request going.
   */
  async admit(tenant: string, waitUntil?: (p: Promise<unknown>) => void): Promise<number | undefined> {
    for (;;) {
      const g = this._grants.get(tenant);
      if (g && g.left > 0 && this._now() < g.untilMs) {
        g.left--;
        return undefined;
      }
      const pending = this._inFlight.get(tenant);
      if (!pending) {
        if (!this._spendReserve(tenant)) return this._refill(tenant, g, true);
        // Let in on the reserve; the limiter is asked beside this request, for the next ones. A
        // failed call leaves no reserve and no grant: the next request asks and waits as usual.
        const beside = this._refill(tenant, g, false).catch(() => undefined);
        waitUntil?.(beside);
        return undefined;
      }
      // Another request of this isolate is asking already: wait for its grant. A refusal is
      // shared (the bucket is empty for everyone); a grant is spent above, or asked for again
      // when it was too small to go round.
      const r = await pending;
      if (!r.ok) return r.retryAfterMs;
    }
  }

  /** Takes the tenant's reserve token when it has one still usable. */
  private _spendReserve(tenant: string): boolean {
    const until = this._reserves.get(tenant);
    if (until === undefined) return false;
    this._reserves.delete(tenant);
    return this._now() < until;
  }

  /**
   * Asks the limiter for the next grant, and for the reserve when none is held. `forCaller`: the
   * request that asks takes one of the tokens (else it was let in on the reserve already).
   */
  private async _refill(tenant: string, last: Grant | undefined, forCaller: boolean): Promise<number | undefined> {
    const startedMs = this._now();
    if (this._grants.size >= SWEEP_AT || this._reserves.size >= SWEEP_AT) this._sweep(startedMs);
    const size = nextSize(last, startedMs, maxGrant(this._ratePerSecond));
    const wantReserve = this._reserveLifeMs > 0 && !this._reserves.has(tenant);
    // A caller asking for itself asks one more for the reserve; a call beside a request that the
    // reserve let in fills the reserve from the grant's own tokens (one for an idle tenant).
    const want = size + (forCaller && wantReserve ? 1 : 0);
    const asked = this._take(tenant, want);
    this._inFlight.set(tenant, asked);
    try {
      const r = await asked;
      if (!r.ok) {
        this._grants.set(tenant, { left: 0, size: 1, untilMs: startedMs });
        return r.retryAfterMs;
      }
      let left = r.granted - (forCaller ? 1 : 0);
      // Only a grant of everything asked means the bucket has room: near the limit, no reserve.
      if (wantReserve && r.granted === want && left > 0) {
        this._reserves.set(tenant, startedMs + this._reserveLifeMs);
        left--;
      }
      // The grant's life starts when it was asked for, so a token is never used later than
      // GRANT_LIFE_MS after the limiter counted it (the reserve's, reserveLifeMs).
      this._grants.set(tenant, { left, size, untilMs: startedMs + GRANT_LIFE_MS });
      return undefined;
    } finally {
      this._inFlight.delete(tenant);
    }
  }

  private _sweep(nowMs: number): void {
    for (const [tenant, g] of this._grants) if (nowMs >= g.untilMs) this._grants.delete(tenant);
    for (const [tenant, until] of this._reserves) if (nowMs >= until) this._reserves.delete(tenant);
  }

  /** Tenants with a grant in memory (for tests). */
  get tenants(): number {
    return this._grants.size;
  }

  /** Tenants holding a reserve token (for tests). */
  get reserves(): number {
    return this._reserves.size;
  }
}

/** One entry per tenant seen: past this many, the expired ones are dropped (they would start at one token again). */
const SWEEP_AT = 1_024;

/** Doubles after a grant used up while fresh, halves after one that expired with tokens left. */
function nextSize(last: Grant | undefined, nowMs: number, most: number): number {
  if (!last) return 1;
  if (last.left === 0 && nowMs < last.untilMs) return Math.min(most, last.size * 2);
  if (last.left > 0) return Math.max(1, last.size >> 1);
  return last.size;
}
