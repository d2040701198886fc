/**
 * The retention sweep (docs/retention.md): one run of the Directory's alarm. It deletes, through
 * each session's own DeleteSession path (tombstone first, then erasure), at most `batch` sessions
 * the tenant's policies select, and says whether more are waiting, so the alarm comes back soon
 * for the next batch instead of running unbounded. Plain TypeScript: the Directory supplies the
 * store, the clock and the delete.
 */
import type { RetentionStore } from "./retention-store.js";

/** How one session's delete went: erased, already gone (no session behind the row), or refused (busy). */
export type RemoveResult = "deleted" | "gone" | "refused";

export interface RetentionSettings {
  /** Length of a retention day in ms (a deployment leaves it at 86,400,000; tests shorten it). */
  dayMs: number;
  /** Most sessions one alarm run deletes. */
  batch: number;
  /** Pause before the next batch when one was full. */
  batchPauseMs: number;
  /** Interval between sweeps once nothing is waiting. */
  sweepMs: number;
}

export const DEFAULT_RETENTION: RetentionSettings = { dayMs: 86_400_000, batch: 50, batchPauseMs: 1_000, sweepMs: 3_600_000 };

/** The settings from the RETENTION_* vars (objects/config.ts), defaults for anything unset or invalid. */
export function retentionSettings(env: { RETENTION_DAY_SECONDS?: string; RETENTION_BATCH?: string; RETENTION_SWEEP_SECONDS?: string }): RetentionSettings {
  const n = (v: string | undefined) => {
    const x = v === undefined ? Number.NaN : Number(v);
    return Number.isFinite(x) && x > 0 ? x : undefined;
  };
  const day = n(env.RETENTION_DAY_SECONDS);
  const batch = n(env.RETENTION_BATCH);
  const sweep = n(env.RETENTION_SWEEP_SECONDS);
  return {
    dayMs: day ? day * 1000 : DEFAULT_RETENTION.dayMs,
    batch: batch ? Math.max(1, Math.floor(batch)) : DEFAULT_RETENTION.batch,
    batchPauseMs: sweep ? Math.min(DEFAULT_RETENTION.batchPauseMs, sweep * 1000) : DEFAULT_RETENTION.batchPauseMs,
    sweepMs: sweep ? sweep * 1000 : DEFAULT_RETENTION.sweepMs,
  };
}

export interface SweepResult {
  deleted: string[];
  /** Selected but refused (a turn was running): tried again on a later sweep. */
  refused: string[];
  /** A batch filled up with sessions deleted: come back after `batchPauseMs`. */
  more: boolean;
}

export async function sweepRetention(o: {
  store: RetentionStore;
  nowMs: number;
  settings: RetentionSettings;
  remove: (tenant: string, uid: string) => Promise<RemoveResult>;
}): Promise<SweepResult> {
  const deleted: string[] = [];
  const refused: string[] = [];
  let budget = o.settings.batch;
  let more = false;
  for (const p of o.store.all()) {
    if (budget <= 0) {
      more = true;
      break;
    }
    const picked = o.store.candidates(p, o.nowMs, o.settings.dayMs, budget);
    let n = 0;
    for (const c of picked) {
      const r = await o.remove(p.tenant, c.uid);
      if (r === "refused") {
        refused.push(c.uid);
        continue;
      }
      // A row with no session behind it (NOT_FOUND) is tombstoned here, so it is not picked again.
      if (r === "gone") o.store.tombstoneGone(c.uid, o.nowMs);
      deleted.push(c.uid);
      n++;
    }
    o.store.counted(p.project, n);
    budget -= picked.length;
    // A full batch with progress may have left more behind; one of refusals only waits for the next sweep.
    if (picked.length > 0 && budget <= 0 && n > 0) more = true;
  }
  o.store.swept(o.nowMs);
  return { deleted, refused, more };
}
