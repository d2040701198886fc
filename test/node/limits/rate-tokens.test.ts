/**
 * Tokens taken ahead by a Worker isolate (worker/rate-tokens.ts) against the real bucket
 * (objects/limits/tenant-limits.ts on sql.js) and a fake clock: never more admitted than the bucket
 * allows, fewer limiter calls for a busy tenant, the same answers as asking each time for a quiet one.
 */
import { describe, expect, it } from "vitest";
import { type LimitSettings, TenantLimits } from "../../../objects/limits/tenant-limits.js";
import { GRANT_LIFE_MS, maxGrant, type RateTokenOptions, RateTokens, RESERVE_LIFE_MS, type Take } from "../../../worker/rate-tokens.js";
import { rng } from "../support/random-messages.js";
import { createTestDb } from "../support/sqljs-db.js";

function limiter(s: LimitSettings, clock: { ms: number }) {
  const bucket = new TenantLimits(createTestDb());
  const calls: number[] = [];
  const take = async (_tenant: string, want: number): Promise<Take> => {
    calls.push(want);
    await Promise.resolve(); // an RPC answers later, never in the same tick
    return bucket.admit(s, clock.ms, want);
  };
  return { bucket, calls, take };
}

/**
 * Random pauses (up to `maxStep` ms) between requests of one tenant, each answered by a
 * RateTokens and by the bucket asked directly on a clock of its own: the answers must agree.
 */
async function answersAsAskingEachTime(s: LimitSettings, seed: number, maxStep: number, options?: RateTokenOptions) {
  const clockA = { ms: 0 };
  const clockB = { ms: 0 };
  const direct = new TenantLimits(createTestDb());
  const l = limiter(s, clockB);
  const tokens = new RateTokens(l.take, s.ratePerSecond, () => clockB.ms, options);
  const r = rng(seed);
  for (let i = 0; i < 300; i++) {
    const step = r.int(maxStep);
    clockA.ms += step;
    clockB.ms += step;
    const want = direct.admit(s, clockA.ms);
    const got = await tokens.admit("t");
    expect(got === undefined).toBe(want.ok);
    if (!want.ok) expect(got).toBe(want.retryAfterMs);
  }
  return { tokens, calls: l.calls };
}

describe("RateTokens", () => {
  it("a busy tenant asks the limiter for growing grants, capped at a tenth of a second of its rate", async () => {
    const clock = { ms: 1_000_000 };
    const s: LimitSettings = { ratePerSecond: 1_000, burst: 5_000, maxConcurrent: 0 };
    const l = limiter(s, clock);
    const tokens = new RateTokens(l.take, s.ratePerSecond, () => clock.ms);
    for (let i = 0; i < 1_000; i++) {
      expect(await tokens.admit("t")).toBeUndefined();
      clock.ms += 0.5;
    }
    expect(maxGrant(s.ratePerSecond)).toBe(32);
    expect(l.calls.slice(0, 7)).toEqual([1, 2, 4, 8, 16, 32, 32]);
    expect(l.calls.length).toBeLessThan(40);
    // Every token handed out was deducted from the bucket; none were used that it did not count.
    expect(l.calls.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1_000);
  });

  it("a quiet or limited tenant gets exactly the answers it would get asking each time", async () => {
    const { calls } = await answersAsAskingEachTime({ ratePerSecond: 5, burst: 3, maxConcurrent: 0 }, 7, 400);
    expect(calls.every((w) => w === 1)).toBe(true);
  });

  it("never lets in more than the bucket allows, across isolates and concurrent requests", async () => {
    const s: LimitSettings = { ratePerSecond: 400, burst: 50, maxConcurrent: 0 };
    const clock = { ms: 10_000 };
    const start = clock.ms;
    const l = limiter(s, clock);
    const isolates = [0, 1, 2].map(() => new RateTokens(l.take, s.ratePerSecond, () => clock.ms));
    const r = rng(11);
    let admitted = 0;
    for (let round = 0; round < 400; round++) {
      const burst = Array.from({ length: 1 + r.int(12) }, () => r.pick(isolates).admit("t"));
      admitted += (await Promise.all(burst)).filter((r) => r === undefined).length;
      clock.ms += r.int(20);
      // The bucket's bound: its burst plus what it refilled since the start.
      expect(admitted).toBeLessThanOrEqual(s.burst + ((clock.ms - start) / 1000) * s.ratePerSecond);
    }
    expect(admitted).toBeGreaterThan(0);
  });

  it("concurrent requests share one call in flight; a refusal reaches every one waiting on it", async () => {
    const clock = { ms: 0 };
    const s: LimitSettings = { ratePerSecond: 1_000, burst: 1, maxConcurrent: 0 };
    const l = limiter(s, clock);
    const tokens = new RateTokens(l.take, s.ratePerSecond, () => clock.ms);
    const answers = await Promise.all(Array.from({ length: 6 }, () => tokens.admit("t")));
    expect(answers[0]).toBeUndefined();
    expect(answers.slice(1).every((a) => typeof a === "number" && a > 0)).toBe(true);
    expect(l.calls).toEqual([1, 2]); // the first grant ran out while fresh, so the second asked for two
  });

  it("tokens left when a grant expires are dropped, and the next grant is smaller", async () => {
    const clock = { ms: 0 };
    const s: LimitSettings = { ratePerSecond: 1_000, burst: 1_000, maxConcurrent: 0 };
    const l = limiter(s, clock);
    const tokens = new RateTokens(l.take, s.ratePerSecond, () => clock.ms);
    for (let i = 0; i < 1 + 2 + 4 + 1; i++) await tokens.admit("t"); // grants of 1, 2, 4, then 8 (7 left)
    expect(l.calls).toEqual([1, 2, 4, 8]);
    clock.ms += GRANT_LIFE_MS;
    await tokens.admit("t");
    expect(l.calls).toEqual([1, 2, 4, 8, 4]);
    // Tenants are kept apart.
    await tokens.admit("other");
    expect(l.calls.at(-1)).toBe(1);
  });

  it("an isolate serving many tenants keeps only the grants still fresh", async () => {
    const clock = { ms: 0 };
    const s: LimitSettings = { ratePerSecond: 1_000, burst: 10_000, maxConcurrent: 0 };
    const l = limiter(s, clock);
    const tokens = new RateTokens(l.take, s.ratePerSecond, () => clock.ms);
    for (let i = 0; i < 1_500; i++) await tokens.admit(`t${i}`);
    expect(tokens.tenants).toBe(1_500);
    clock.ms += GRANT_LIFE_MS;
    for (let i = 0; i < 10; i++) await tokens.admit(`fresh${i}`);
    expect(tokens.tenants).toBe(10);
  });

  describe("with a reserve token", () => {
    /** A limiter whose answers the test releases one by one, to see what waits for it. */
    function heldLimiter(s: LimitSettings, clock: { ms: number }) {
      const bucket = new TenantLimits(createTestDb());
      const calls: { want: number; answer: () => void }[] = [];
      const take = (_tenant: string, want: number) => new Promise<Take>((ok) => calls.push({ want, answer: () => ok(bucket.admit(s, clock.ms, want)) }));
      return { calls, take };
    }
    const settled = async <T>(p: Promise<T>): Promise<{ done: boolean; value?: T }> => {
      let out: { done: boolean; value?: T } = { done: false };
      void p.then((value) => (out = { done: true, value }));
      for (let i = 0; i < 10; i++) await Promise.resolve();
      return out;
    };

    it("a request after a pause is let in without waiting, and the limiter is asked beside it", async () => {
      const clock = { ms: 0 };
      const s: LimitSettings = { ratePerSecond: 200, burst: 1_000, maxConcurrent: 0 };
      const l = heldLimiter(s, clock);
      const kept: Promise<unknown>[] = [];
      const tokens = new RateTokens(l.take, s.ratePerSecond, () => clock.ms, { reserveLifeMs: RESERVE_LIFE_MS });
      // The first request waits: one for itself, one for the reserve.
      const first = tokens.admit("t", (p) => kept.push(p));
      expect((await settled(first)).done).toBe(false);
      expect(l.calls.map((c) => c.want)).toEqual([2]);
      l.calls[0]!.answer();
      expect(await first).toBeUndefined();
      expect(tokens.reserves).toBe(1);
      // A pause longer than a grant lives: the next request is admitted before the limiter answers.
      clock.ms += 30_000;
      const next = await settled(tokens.admit("t", (p) => kept.push(p)));
      expect(next).toEqual({ done: true, value: undefined });
      expect(l.calls.map((c) => c.want)).toEqual([2, 1]);
      expect(kept).toHaveLength(1);
      expect(tokens.reserves).toBe(0);
      l.calls[1]!.answer();
      await kept[0];
      expect(tokens.reserves).toBe(1);
    });

    it("a request while the limiter is being asked beside another waits for that answer", async () => {
      const clock = { ms: 0 };
      const s: LimitSettings = { ratePerSecond: 200, burst: 1_000, maxConcurrent: 0 };
      const l = heldLimiter(s, clock);
      const tokens = new RateTokens(l.take, s.ratePerSecond, () => clock.ms, { reserveLifeMs: RESERVE_LIFE_MS });
      const first = tokens.admit("t");
      l.calls[0]!.answer();
      await first;
      clock.ms += 5_000;
      expect(await tokens.admit("t")).toBeUndefined(); // on the reserve
      const waiting = tokens.admit("t");
      expect((await settled(waiting)).done).toBe(false);
      expect(l.calls).toHaveLength(2); // no second call: it shares the one in flight
      clock.ms += 1;
      l.calls[1]!.answer();
      expect(await waiting).toBeUndefined();
    });

    it("expires unused, and a limiter that has no room gives none", async () => {
      const clock = { ms: 0 };
      const s: LimitSettings = { ratePerSecond: 200, burst: 2, maxConcurrent: 0 };
      const l = limiter(s, clock);
      const tokens = new RateTokens(l.take, s.ratePerSecond, () => clock.ms, { reserveLifeMs: RESERVE_LIFE_MS });
      expect(await tokens.admit("t")).toBeUndefined();
      expect(tokens.reserves).toBe(1);
      clock.ms += RESERVE_LIFE_MS;
      expect(await tokens.admit("t")).toBeUndefined();
      // The expired reserve was not spent: this request waited for a grant of 2 (one for the reserve).
      expect(l.calls).toEqual([2, 2]);
      // The bucket is empty now (burst 2): no reserve, and the next request is refused as it
      // would be asking each time.
      expect(tokens.reserves).toBe(1);
      expect(await tokens.admit("t")).toBeUndefined(); // the reserve
      const refused = await tokens.admit("t");
      expect(typeof refused).toBe("number");
      expect(tokens.reserves).toBe(0);
    });

    it("a limiter call beside a request that fails leaves no reserve, and the next request asks and waits", async () => {
      const clock = { ms: 0 };
      const s: LimitSettings = { ratePerSecond: 200, burst: 1_000, maxConcurrent: 0 };
      const bucket = new TenantLimits(createTestDb());
      let fail = false;
      const calls: number[] = [];
      const take = async (_t: string, want: number): Promise<Take> => {
        calls.push(want);
        await Promise.resolve();
        if (fail) throw new Error("limiter unreachable");
        return bucket.admit(s, clock.ms, want);
      };
      const kept: Promise<unknown>[] = [];
      const tokens = new RateTokens(take, s.ratePerSecond, () => clock.ms, { reserveLifeMs: RESERVE_LIFE_MS });
      await tokens.admit("t");
      clock.ms += 5_000;
      fail = true;
      expect(await tokens.admit("t", (p) => kept.push(p))).toBeUndefined();
      await Promise.all(kept); // the failure stays beside the request: nothing rejects
      expect(tokens.reserves).toBe(0);
      await expect(tokens.admit("t")).rejects.toThrow("limiter unreachable");
      fail = false;
      expect(await tokens.admit("t")).toBeUndefined();
    });

    it("a rate of grants of one keeps no reserve and answers exactly as asking each time", async () => {
      const s: LimitSettings = { ratePerSecond: 19, burst: 3, maxConcurrent: 0 };
      expect(maxGrant(s.ratePerSecond)).toBe(1);
      const { tokens, calls } = await answersAsAskingEachTime(s, 5, 300, { reserveLifeMs: RESERVE_LIFE_MS });
      expect(tokens.reserves).toBe(0);
      expect(calls.every((w) => w === 1)).toBe(true);
    });

    it("never lets in more than the bucket counted, across isolates, pauses and concurrent requests", async () => {
      const s: LimitSettings = { ratePerSecond: 400, burst: 50, maxConcurrent: 0 };
      const clock = { ms: 10_000 };
      const start = clock.ms;
      const l = limiter(s, clock);
      const kept: Promise<unknown>[] = [];
      const isolates = [0, 1, 2].map(() => new RateTokens(l.take, s.ratePerSecond, () => clock.ms, { reserveLifeMs: RESERVE_LIFE_MS }));
      const r = rng(13);
      let admitted = 0;
      let spentOnReserve = 0;
      for (let round = 0; round < 600; round++) {
        const burst = Array.from({ length: 1 + r.int(12) }, () => r.pick(isolates).admit("t", (p) => kept.push(p)));
        const answers = await Promise.all(burst);
        // waitUntil is handed only the limiter call made beside a request let in on the reserve.
        spentOnReserve += kept.length;
        await Promise.all(kept.splice(0));
        admitted += answers.filter((a) => a === undefined).length;
        clock.ms += r.int(4) === 0 ? 1_000 + r.int(5_000) : r.int(20);
        // Every admitted request was counted by the bucket: its burst plus what it refilled.
        expect(admitted).toBeLessThanOrEqual(s.burst + ((clock.ms - start) / 1000) * s.ratePerSecond);
      }
      expect(admitted).toBeGreaterThan(0);
      expect(spentOnReserve).toBeGreaterThan(0);
    });
  });
});
