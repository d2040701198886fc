/** The per-tenant rate bucket and execution leases (objects/limits), on sql.js with a fake clock. */
import { describe, expect, it } from "vitest";
import { TenantLimits, type LimitSettings } from "../../../objects/limits/tenant-limits.js";
import { createTestDb } from "../support/sqljs-db.js";

const settings: LimitSettings = { ratePerSecond: 10, burst: 3, maxConcurrent: 2, leaseMs: 60_000 };

describe("TenantLimits", () => {
  it("admit: a full bucket lets a burst through, then one request per 1/rate seconds", () => {
    const l = new TenantLimits(createTestDb());
    const at = 1_000_000;
    expect([1, 2, 3].map(() => l.admit(settings, at).ok)).toEqual([true, true, true]);
    const refused = l.admit(settings, at);
    expect(refused).toEqual({ ok: false, retryAfterMs: 100 });
    expect(l.admit(settings, at + 50).ok).toBe(false);
    expect(l.admit(settings, at + 100).ok).toBe(true);
    expect(l.admit(settings, at + 100).ok).toBe(false);
    // A long quiet spell refills to the burst, not beyond.
    const later = at + 60_000;
    expect([1, 2, 3, 4].map(() => l.admit(settings, later).ok)).toEqual([true, true, true, false]);
  });

  it("admit: rate 0 is off", () => {
    const l = new TenantLimits(createTestDb());
    for (let i = 0; i < 100; i++) expect(l.admit({ ...settings, ratePerSecond: 0 }, 5).ok).toBe(true);
  });

  it("acquire: at most maxConcurrent sessions; a session already running is let in; release frees only its own lease", () => {
    const l = new TenantLimits(createTestDb());
    expect(l.acquire(settings, "s1", "a", 0).ok).toBe(true);
    expect(l.acquire(settings, "s2", "b", 0).ok).toBe(true);
    expect(l.acquire(settings, "s3", "c", 0)).toEqual({ ok: false, running: 2 });
    // A second Exec on s1 (the session will refuse it as busy) is not a third running session.
    expect(l.acquire(settings, "s1", "d", 0).ok).toBe(true);
    expect(l.running(0)).toBe(2);
    l.release("s1", "d");
    expect(l.running(0)).toBe(2);
    expect(l.acquire(settings, "s3", "c", 0).ok).toBe(false);
    l.release("s1", "a");
    expect(l.acquire(settings, "s3", "c", 0).ok).toBe(true);
  });

  it("acquire: a lease never released expires after leaseMs", () => {
    const l = new TenantLimits(createTestDb());
    l.acquire(settings, "s1", "a", 0);
    l.acquire(settings, "s2", "b", 0);
    expect(l.acquire(settings, "s3", "c", 59_999).ok).toBe(false);
    expect(l.acquire(settings, "s3", "c", 60_000).ok).toBe(true);
    expect(l.running(60_000)).toBe(1);
  });
});
