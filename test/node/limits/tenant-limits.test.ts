/** The per-tenant rate bucket and execution leases (objects/limits), on sql.js with a fake clock. */
import { describe, expect, it } from "vitest";
import { KEEP_ASK_BUSY_MS, KEEP_ASK_MS, type LimitSettings, RECHECK_MS, TenantLimits } from "../../../objects/limits/tenant-limits.js";
import { createTestDb } from "../support/sqljs-db.js";

const settings: LimitSettings = { ratePerSecond: 10, burst: 3, maxConcurrent: 2 };

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

  it("admit: several tokens at once are as many as the bucket holds, never more, at least one", () => {
    const l = new TenantLimits(createTestDb());
    const at = 2_000_000;
    expect(l.admit(settings, at, 2)).toEqual({ ok: true, granted: 2 });
    expect(l.admit(settings, at, 5)).toEqual({ ok: true, granted: 1 });
    expect(l.admit(settings, at, 5)).toEqual({ ok: false, retryAfterMs: 100 });
    expect(l.admit(settings, at + 250, 5)).toEqual({ ok: true, granted: 2 });
  });

  it("admit: rate 0 is off", () => {
    const l = new TenantLimits(createTestDb());
    for (let i = 0; i < 100; i++) expect(l.admit({ ...settings, ratePerSecond: 0 }, 5).ok).toBe(true);
  });

  // Which (session, owner) pairs a session object would still vouch for, and who was asked.
  const objects = (running: Set<string>) => {
    const asked: string[] = [];
    const isRunning = async (session: string, owner: string) => {
      asked.push(`${session}:${owner}`);
      return running.has(`${session}:${owner}`);
    };
    return { asked, isRunning };
  };

  it("acquire: at most maxConcurrent sessions; a session already running is let in; release frees only its own lease", async () => {
    const l = new TenantLimits(createTestDb());
    const o = objects(new Set(["s1:a", "s2:b", "s1:d"]));
    expect((await l.acquire(settings, "s1", "a", 0, o.isRunning)).ok).toBe(true);
    expect((await l.acquire(settings, "s2", "b", 0, o.isRunning)).ok).toBe(true);
    expect(await l.acquire(settings, "s3", "c", 0, o.isRunning)).toEqual({ ok: false, running: 2 });
    // A second turn on s1 (a recovery after its object restarted) takes over its row: still 2.
    expect((await l.acquire(settings, "s1", "d", 0, o.isRunning)).ok).toBe(true);
    expect(l.running()).toBe(2);
    // The old owner's release no longer frees anything.
    l.release("s1", "a");
    expect(l.running()).toBe(2);
    expect((await l.acquire(settings, "s3", "c", 10_000, o.isRunning)).ok).toBe(false);
    l.release("s1", "d");
    expect((await l.acquire(settings, "s3", "c", 10_000, o.isRunning)).ok).toBe(true);
  });

  it("release: writes nothing; the row goes with the next acquire's write, and a limiter that forgot the release drops it by asking the object", async () => {
    const db = createTestDb();
    const rows = () => db.query<{ session: string }>("SELECT session FROM running ORDER BY session").map((r) => r.session);
    const l = new TenantLimits(db);
    const o = objects(new Set(["s1:a", "s2:b"]));
    expect((await l.acquire(settings, "s1", "a", 0, o.isRunning)).ok).toBe(true);
    expect((await l.acquire(settings, "s2", "b", 0, o.isRunning)).ok).toBe(true);
    const before = db.raw.export();
    l.release("s1", "a");
    // Given back: counted out at once, deleted later.
    expect(l.running()).toBe(1);
    expect(rows()).toEqual(["s1", "s2"]);
    expect((await l.acquire(settings, "s3", "c", 0, o.isRunning)).ok).toBe(true);
    expect(rows()).toEqual(["s2", "s3"]);
    // A limiter evicted before the next acquire: the given-back row is still stored, and its
    // object (which finished that turn) disowns it, so it never keeps the tenant out.
    const again = new TenantLimits(createTestDb(before));
    const after = objects(new Set(["s2:b"]));
    expect((await again.acquire(settings, "s3", "c", 0, after.isRunning)).ok).toBe(true);
    expect(again.running()).toBe(2);
  });

  it("acquire: at the limit, rows whose session object no longer runs that turn are dropped, so a crash never locks the tenant out", async () => {
    const l = new TenantLimits(createTestDb());
    const alive = new Set(["s1:a", "s2:b"]);
    const o = objects(alive);
    await l.acquire(settings, "s1", "a", 0, o.isRunning);
    await l.acquire(settings, "s2", "b", 0, o.isRunning);
    // Both turns really run: they count, and nothing is dropped.
    expect(await l.acquire(settings, "s3", "c", 5_000, o.isRunning)).toEqual({ ok: false, running: 2 });
    expect(o.asked.sort()).toEqual(["s1:a", "s2:b"]);
    // s1's object restarted (a crash): it disowns the row, which goes; s3 takes the slot.
    alive.delete("s1:a");
    expect((await l.acquire(settings, "s3", "c", 10_000, o.isRunning)).ok).toBe(true);
    expect(l.running()).toBe(2);
  });

  it("acquire: nothing expires by time, and a row is put to its object at most once per RECHECK_MS", async () => {
    const l = new TenantLimits(createTestDb());
    const o = objects(new Set(["s1:a", "s2:b"]));
    await l.acquire(settings, "s1", "a", 0, o.isRunning);
    await l.acquire(settings, "s2", "b", 0, o.isRunning);
    const day = 24 * 3600_000;
    expect((await l.acquire(settings, "s3", "c", day, o.isRunning)).ok).toBe(false);
    const asked = o.asked.length;
    expect((await l.acquire(settings, "s3", "c", day + RECHECK_MS - 1, o.isRunning)).ok).toBe(false);
    expect(o.asked.length).toBe(asked);
    expect((await l.acquire(settings, "s3", "c", day + RECHECK_MS, o.isRunning)).ok).toBe(false);
    expect(o.asked.length).toBe(asked + 2);
  });

  it("acquire: an object that cannot answer keeps its row counted", async () => {
    const l = new TenantLimits(createTestDb());
    await l.acquire(settings, "s1", "a", 0, async () => true);
    await l.acquire(settings, "s2", "b", 0, async () => true);
    const failing = async () => {
      throw new Error("unreachable");
    };
    expect(await l.acquire(settings, "s3", "c", 10_000, failing)).toEqual({ ok: false, running: 2 });
  });

  describe("rows kept between turns", () => {
    const wide: LimitSettings = { ...settings, maxConcurrent: 8 };
    /** Lets the asks made beside an acquire answer. */
    const settle = () => new Promise((ok) => setTimeout(ok, 0));

    it("a kept row counts, and is put to its session beside the first acquire once kept KEEP_ASK_MS: disowned, it goes", async () => {
      const l = new TenantLimits(createTestDb());
      const o = objects(new Set(["s2:b"]));
      await l.acquire(wide, "s1", "a", 0, o.isRunning);
      l.keep("s1", "a", 10);
      expect(l.running()).toBe(1);
      expect(l.kept).toBe(1);
      // Not yet due: nobody is asked.
      await l.acquire(wide, "s2", "b", 10 + KEEP_ASK_MS - 1, o.isRunning);
      await settle();
      expect(o.asked).toEqual([]);
      expect(l.running()).toBe(2);
      // Due: asked once, beside the acquire; s1 no longer keeps it, so the row goes.
      await l.acquire(wide, "s3", "c", 10 + KEEP_ASK_MS, o.isRunning);
      await settle();
      expect(o.asked).toEqual(["s1:a"]);
      expect(l.running()).toBe(2);
      expect(l.kept).toBe(0);
      await l.acquire(wide, "s4", "d", 10 + 2 * KEEP_ASK_MS, o.isRunning);
      await settle();
      expect(o.asked).toEqual(["s1:a"]);
    });

    it("while the tenant runs more than half its limit, a kept row is put to its session once kept KEEP_ASK_BUSY_MS", async () => {
      const l = new TenantLimits(createTestDb());
      const o = objects(new Set(["s2:b", "s3:c", "s4:d", "s5:e", "s6:f"]));
      await l.acquire(wide, "s1", "a", 0, o.isRunning);
      l.keep("s1", "a", 0);
      // Half the limit (4 of 8), due for a busy tenant: nobody is asked.
      for (const s of ["s2:b", "s3:c", "s4:d"]) await l.acquire(wide, s.split(":")[0]!, s.split(":")[1]!, KEEP_ASK_BUSY_MS, o.isRunning);
      await settle();
      expect(o.asked).toEqual([]);
      expect(l.running()).toBe(4);
      // More than half, not yet due: nobody is asked.
      await l.acquire(wide, "s5", "e", KEEP_ASK_BUSY_MS - 1, o.isRunning);
      await settle();
      expect(o.asked).toEqual([]);
      // More than half and due: s1 went quiet, so its row goes and makes room.
      await l.acquire(wide, "s6", "f", KEEP_ASK_BUSY_MS, o.isRunning);
      await settle();
      expect(o.asked).toEqual(["s1:a"]);
      expect(l.kept).toBe(0);
      expect(l.running()).toBe(5);
    });

    it("a kept row its session runs a turn on again stays counted", async () => {
      const l = new TenantLimits(createTestDb());
      const o = objects(new Set(["s1:a"]));
      await l.acquire(wide, "s1", "a", 0, o.isRunning);
      l.keep("s1", "a", 0);
      await l.acquire(wide, "s2", "b", KEEP_ASK_MS, o.isRunning);
      await settle();
      expect(o.asked).toEqual(["s1:a"]);
      expect(l.running()).toBe(2);
    });

    it("a kept row taken over by its session's new turn, or given back, is not asked about", async () => {
      const l = new TenantLimits(createTestDb());
      const o = objects(new Set());
      await l.acquire(wide, "s1", "a", 0, o.isRunning);
      l.keep("s1", "a", 0);
      await l.acquire(wide, "s1", "a2", 1, o.isRunning);
      await l.acquire(wide, "s2", "b", 1, o.isRunning);
      l.keep("s2", "b", 1);
      l.release("s2", "b");
      // A keep for an owner that no longer holds the row is ignored.
      l.keep("s1", "a", 2);
      expect(l.kept).toBe(0);
      await l.acquire(wide, "s3", "c", 2 * KEEP_ASK_MS, o.isRunning);
      await settle();
      expect(o.asked).toEqual([]);
      expect(l.running()).toBe(2);
    });

    it("a kept row given back while its session is being asked is counted out once", async () => {
      const l = new TenantLimits(createTestDb());
      let answer!: (running: boolean) => void;
      const asked = new Promise<boolean>((ok) => (answer = ok));
      await l.acquire(wide, "s1", "a", 0, async () => true);
      l.keep("s1", "a", 0);
      await l.acquire(wide, "s2", "b", KEEP_ASK_MS, () => asked);
      expect(l.running()).toBe(2);
      l.release("s1", "a");
      expect(l.running()).toBe(1);
      answer(false);
      await settle();
      expect(l.running()).toBe(1);
    });

    it("at the limit, kept rows are put to their sessions at once, whatever their age", async () => {
      const l = new TenantLimits(createTestDb());
      const o = objects(new Set(["s2:b"]));
      await l.acquire(settings, "s1", "a", 0, o.isRunning);
      l.keep("s1", "a", 0);
      await l.acquire(settings, "s2", "b", 0, o.isRunning);
      expect((await l.acquire(settings, "s3", "c", 1, o.isRunning)).ok).toBe(true);
      expect(o.asked.sort()).toEqual(["s1:a", "s2:b"]);
      expect(l.kept).toBe(0);
    });
  });
});
