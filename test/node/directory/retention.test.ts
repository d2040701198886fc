/**
 * Retention in process (docs/retention.md): which sessions a policy selects, and the sweep that
 * deletes them in bounded batches, with a fixed clock on sql.js. The same through a real host,
 * the Directory's alarm and DeleteSession: test/node/integration/retention.test.ts.
 */
import { describe, expect, it } from "vitest";
import { DirectoryStore, type DirectoryRow } from "../../../objects/directory/directory-store.js";
import { RetentionStore } from "../../../objects/directory/retention-store.js";
import { DEFAULT_RETENTION, retentionSettings, sweepRetention, type RemoveResult } from "../../../objects/directory/retention-sweep.js";
import { createTestDb } from "../support/sqljs-db.js";

const DAY = 86_400_000;
const NOW = 1_800_000_000_000;
let n = 0;

function row(project: string, idleDays: number): DirectoryRow {
  const uid = `sess-${(n++).toString(16).padStart(24, "0")}`;
  const ms = NOW - idleDays * DAY;
  return { uid, project, createMs: ms - DAY, updateMs: ms, headSeq: 1, headHash: "h", session: new TextEncoder().encode(uid) };
}

function setup() {
  const db = createTestDb();
  const dir = new DirectoryStore(db);
  const retention = new RetentionStore(db);
  const listed = (project: string) => (dir.list(project, 500, "") as { sessions: Uint8Array[] }).sessions.map((b) => new TextDecoder().decode(b)).sort();
  // Deletes as a session object does: the Directory keeps a tombstone.
  const remove = async (_tenant: string, uid: string): Promise<RemoveResult> => {
    const r = rows.get(uid);
    if (!r) return "gone";
    dir.tombstone(r, NOW);
    return "deleted";
  };
  const rows = new Map<string, DirectoryRow>();
  const add = (r: DirectoryRow) => {
    rows.set(r.uid, r);
    dir.upsert(r);
    return r;
  };
  return { dir, retention, listed, remove, add, rows };
}

describe("retention", () => {
  it("candidates: sessions idle longer than the days, oldest first, never the latest K, only the policy's project", () => {
    const { retention, add } = setup();
    const old = [add(row("p", 40)), add(row("p", 31)), add(row("p", 35))];
    const fresh = add(row("p", 2));
    add(row("other", 90));
    const picked = (keepLatest: number) => retention.candidates({ project: "p", days: 30, keepLatest }, NOW, DAY, 100).map((c) => c.uid);
    expect(picked(0)).toEqual([old[0]!.uid, old[2]!.uid, old[1]!.uid]);
    // Keeping the latest 2 keeps the fresh one and the most recently active old one.
    expect(picked(2)).toEqual([old[0]!.uid, old[2]!.uid]);
    expect(picked(10)).toEqual([]);
    expect(picked(0)).not.toContain(fresh.uid);
  });

  it("sweep: deletes in batches of `batch`, says when more wait, keeps the latest K and other projects untouched", async () => {
    const { retention, listed, remove, add } = setup();
    const idle = Array.from({ length: 5 }, (_, i) => add(row("p", 10 + i)));
    const kept = [add(row("p", 1)), add(row("p", 3))];
    const others = [add(row("q", 50)), add(row("q", 60))];
    retention.set({ project: "p", tenant: "t", days: 7, keepLatest: 1, updateMs: NOW });
    const settings = { ...DEFAULT_RETENTION, batch: 2 };

    const first = await sweepRetention({ store: retention, nowMs: NOW, settings, remove });
    expect(first).toEqual({ deleted: [idle[4]!.uid, idle[3]!.uid], refused: [], more: true });
    const second = await sweepRetention({ store: retention, nowMs: NOW, settings, remove });
    expect(second.deleted).toEqual([idle[2]!.uid, idle[1]!.uid]);
    expect(second.more).toBe(true);
    const third = await sweepRetention({ store: retention, nowMs: NOW, settings, remove });
    expect(third).toEqual({ deleted: [idle[0]!.uid], refused: [], more: false });
    expect(await sweepRetention({ store: retention, nowMs: NOW, settings, remove })).toEqual({ deleted: [], refused: [], more: false });

    expect(listed("p")).toEqual(kept.map((r) => r.uid).sort());
    expect(listed("q")).toEqual(others.map((r) => r.uid).sort());
    expect(retention.get("p")).toMatchObject({ days: 7, keepLatest: 1, deleted: 5 });
    expect(retention.lastSweep()).toEqual({ lastMs: NOW, runs: 4 });
  });

  it("sweep: a refused delete (a turn running) is left for a later sweep, and does not spin the alarm", async () => {
    const { retention, add, dir } = setup();
    const a = add(row("p", 10));
    retention.set({ project: "p", tenant: "t", days: 1, keepLatest: 0, updateMs: NOW });
    const busy = async (): Promise<RemoveResult> => "refused";
    const r = await sweepRetention({ store: retention, nowMs: NOW, settings: { ...DEFAULT_RETENTION, batch: 1 }, remove: busy });
    expect(r).toEqual({ deleted: [], refused: [a.uid], more: false });
    expect(dir.head(a.uid)?.deletedMs).toBeUndefined();
  });

  it("sweep: a row whose session is already gone is tombstoned, so it is not picked again", async () => {
    const { retention, dir } = setup();
    const orphan = row("p", 10);
    dir.upsert(orphan);
    retention.set({ project: "p", tenant: "t", days: 1, keepLatest: 0, updateMs: NOW });
    const gone = async (): Promise<RemoveResult> => "gone";
    expect((await sweepRetention({ store: retention, nowMs: NOW, settings: DEFAULT_RETENTION, remove: gone })).deleted).toEqual([orphan.uid]);
    expect(dir.head(orphan.uid)?.deletedMs).toBe(NOW);
    expect(retention.candidates({ project: "p", days: 1, keepLatest: 0 }, NOW, DAY, 10)).toEqual([]);
  });

  it("settings: RETENTION_* vars override the defaults; invalid values keep them", () => {
    expect(retentionSettings({})).toEqual(DEFAULT_RETENTION);
    expect(retentionSettings({ RETENTION_DAY_SECONDS: "2", RETENTION_BATCH: "3", RETENTION_SWEEP_SECONDS: "0.5" })).toEqual({
      dayMs: 2000,
      batch: 3,
      batchPauseMs: 500,
      sweepMs: 500,
    });
    expect(retentionSettings({ RETENTION_BATCH: "-1", RETENTION_DAY_SECONDS: "x" })).toEqual(DEFAULT_RETENTION);
  });
});
