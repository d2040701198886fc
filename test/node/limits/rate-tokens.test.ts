/**
 * Tokens taken ahead by a Worker isolate (worker/rate-tokens.ts) against the real bucket
 * (objects/limits/tenant-limits.ts on sql.js) and a fake clock: never more admitted than the bucket
 * allows, fewer limiter calls for a busy tenant, the same answers as asking each time for a quiet one.
 */
import { describe, expect, it } from "vitest";
import { type LimitSettings, TenantLimits } from "../../../objects/limits/tenant-limits.js";
import { GRANT_LIFE_MS, maxGrant, RateTokens, type Take } from "../../../worker/rate-tokens.js";
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
    const s: LimitSettings = { ratePerSecond: 5, burst: 3, maxConcurrent: 0 };
    const clockA = { ms: 0 };
    const clockB = { ms: 0 };
    const direct = new TenantLimits(createTestDb());
    const l = limiter(s, clockB);
    const tokens = new RateTokens(l.take, s.ratePerSecond, () => clockB.ms);
    const r = rng(7);
    for (let i = 0; i < 300; i++) {
      const step = r.int(400);
      clockA.ms += step;
      clockB.ms += step;
      const want = direct.admit(s, clockA.ms);
      const got = await tokens.admit("t");
      expect(got === undefined).toBe(want.ok);
      if (!want.ok) expect(got).toBe(want.retryAfterMs);
    }
    expect(l.calls.every((w) => w === 1)).toBe(true);
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
});
