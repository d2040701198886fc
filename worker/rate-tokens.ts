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
 * Test: test/node/limits/rate-tokens.test.ts.
 */

/** How long a grant's tokens stay usable in the isolate that took them. */
export const GRANT_LIFE_MS = 1_000;
const MOST_PER_GRANT = 32;

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

export class RateTokens {
  private readonly _grants = new Map<string, Grant>();
  private readonly _inFlight = new Map<string, Promise<Take>>();

  constructor(
    private readonly _take: (tenant: string, want: number) => Promise<Take>,
    private readonly _ratePerSecond: number,
    private readonly _now: () => number = Date.now,
  ) {}

  /** Spends one of the tenant's tokens: undefined when admitted, else the milliseconds until the next one. */
  async admit(tenant: string): Promise<number | undefined> {
    for (;;) {
      const g = this._grants.get(tenant);
      if (g && g.left > 0 && this._now() < g.untilMs) {
        g.left--;
        return undefined;
      }
      const pending = this._inFlight.get(tenant);
      if (!pending) return this._refill(tenant, g);
      // Another request of this isolate is asking already: wait for its grant. A refusal is
      // shared (the bucket is empty for everyone); a grant is spent above, or asked for again
      // when it was too small to go round.
      const r = await pending;
      if (!r.ok) return r.retryAfterMs;
    }
  }

  private async _refill(tenant: string, last: Grant | undefined): Promise<number | undefined> {
    const startedMs = this._now();
    if (this._grants.size >= SWEEP_AT) this._sweep(startedMs);
    const size = nextSize(last, startedMs, maxGrant(this._ratePerSecond));
    const asked = this._take(tenant, size);
    this._inFlight.set(tenant, asked);
    try {
      const r = await asked;
      if (!r.ok) {
        this._grants.set(tenant, { left: 0, size: 1, untilMs: startedMs });
        return r.retryAfterMs;
      }
      // The grant's life starts when it was asked for, so a token is never used later than
      // GRANT_LIFE_MS after the limiter counted it.
      this._grants.set(tenant, { left: r.granted - 1, size, untilMs: startedMs + GRANT_LIFE_MS });
      return undefined;
    } finally {
      this._inFlight.delete(tenant);
    }
  }

  private _sweep(nowMs: number): void {
    for (const [tenant, g] of this._grants) if (nowMs >= g.untilMs) this._grants.delete(tenant);
  }

  /** Tenants with a grant in memory (for tests). */
  get tenants(): number {
    return this._grants.size;
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
