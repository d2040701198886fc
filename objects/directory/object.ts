/**
 * Directory: one Durable Object per tenant holding its session index (ListSessions), the chain
 * heads its sessions reported, and its harness registry (HarnessRegistry; docs/behaviour.md §6.4).
 * Thin: the SQL lives in objects/directory/directory-store.ts and registry-store.ts.
 *
 * Its alarm runs the tenant's retention policies (docs/retention.md): each run deletes one bounded
 * batch through the sessions' own DeleteSession (objects/directory/retention-sweep.ts).
 */
import { DurableObject } from "cloudflare:workers";
import type { Sha256Hex } from "../../proto/blob-ref.js";
import { createR2BlobStore } from "../blobs/blob-store.js";
import { BlobCollector } from "./blob-collector.js";
import { BlobOwnersStore } from "./blob-owners-store.js";
import { DirectoryStore, type DirectoryRow, type ListResult } from "./directory-store.js";
import { RegistryStore, type HarnessLookup, type HarnessRecord, type RegisterResult, type RetireResult } from "./registry-store.js";
import { RetentionStore, type RetentionCandidateRow, type RetentionPolicyRow } from "./retention-store.js";
import { retentionSettings, sweepRetention, type RemoveResult, type SweepResult } from "./retention-sweep.js";
import { sessionStub, type Env } from "../env.js";
import { sqlDbFromStorage } from "../storage/do-sql.js";
import { configureLogLevel, writeLogLine } from "../log-line.js";

export class Directory extends DurableObject<Env> {
  private readonly _store: DirectoryStore;
  private readonly _registry: RegistryStore;
  private readonly _blobs: BlobCollector;
  private readonly _retention: RetentionStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    configureLogLevel(env);
    const db = sqlDbFromStorage(ctx.storage);
    this._store = new DirectoryStore(db);
    this._registry = new RegistryStore(db, () => Date.now());
    this._blobs = new BlobCollector(new BlobOwnersStore(db), env.BLOBS && createR2BlobStore(env.BLOBS), (ms) => this._wake(Date.now() + ms));
    this._retention = new RetentionStore(db);
  }

  upsert(row: DirectoryRow): void {
    this._store.upsert(row);
  }

  list(project: string, pageSize: number, pageToken: string): ListResult {
    return this._store.list(project, pageSize, pageToken);
  }

  upsertMany(rows: DirectoryRow[]): void {
    this._store.upsertMany(rows);
  }

  /** Tombstones a deleted session and releases the blobs it owned (docs/blobs.md "Deletion"). */
  async tombstone(row: DirectoryRow, deletedMs: number, tenant = ""): Promise<void> {
    this._store.tombstone(row, deletedMs);
    if (tenant) await this._blobs.release(tenant, row.uid);
  }

  /**
   * Counts each session of `uids` as an owner of each digest, before the bytes are stored or a
   * record names them (objects/directory/blob-collector.ts).
   */
  ownBlobs(uids: string[], shas: Sha256Hex[]): Promise<void> {
    return this._blobs.own(uids, shas);
  }

  /** Releases what `uid` owns without a tombstone: a fork child that was discarded. */
  releaseBlobs(tenant: string, uid: string): Promise<void> {
    return this._blobs.release(tenant, uid);
  }

  head(uid: string): { seq: number; hash: string; deletedMs?: number } | undefined {
    return this._store.head(uid);
  }

  // The harness registry. The Worker validated the name and spec and computed the digest.

  registerHarness(name: string, spec: Uint8Array, specDigest: string, placement?: Uint8Array): RegisterResult {
    return this._registry.register(name, spec, specDigest, placement);
  }

  getHarness(name: string): HarnessRecord | undefined {
    return this._registry.get(name);
  }

  listHarnesses(after: string, limit: number, includeRetired: boolean): HarnessRecord[] {
    return this._registry.list(after, limit, includeRetired);
  }

  retireHarness(name: string, reason: string): RetireResult {
    return this._registry.retire(name, reason);
  }

  /** For session creation and routing: a registered name's state and pinned spec, or undefined. */
  lookupHarness(name: string): HarnessLookup | undefined {
    return this._registry.lookup(name);
  }

  // Retention (docs/retention.md). The Worker validated the policy.

  /**
   * Stores a project's policy (days 0 clears it) and arms the alarm to sweep now; a dry run stores
   * nothing and answers what the policy would delete at once (at most `limit`, and whether more).
   */
  async setRetention(
    tenant: string,
    policy: { project: string; days: number; keepLatest: number },
    dryRun: boolean,
    limit: number,
  ): Promise<{ policy: RetentionPolicyRow | undefined; wouldDelete: RetentionCandidateRow[]; truncated: boolean }> {
    const now = Date.now();
    if (dryRun) {
      if (policy.days === 0) return { policy: undefined, wouldDelete: [], truncated: false };
      const picked = this._retention.candidates(policy, now, retentionSettings(this.env).dayMs, limit + 1);
      return { policy: { ...policy, tenant, updateMs: 0, deleted: 0 }, wouldDelete: picked.slice(0, limit), truncated: picked.length > limit };
    }
    if (policy.days === 0) {
      this._retention.clear(policy.project);
      return { policy: undefined, wouldDelete: [], truncated: false };
    }
    this._retention.set({ ...policy, tenant, updateMs: now });
    await this._wake(now);
    return { policy: this._retention.get(policy.project), wouldDelete: [], truncated: false };
  }

  getRetention(project: string): { policy: RetentionPolicyRow | undefined; lastSweepMs: number; sweeps: number } {
    const last = this._retention.lastSweep();
    return { policy: this._retention.get(project), lastSweepMs: last.lastMs, sweeps: last.runs };
  }

  /**
   * The object's one alarm serves two jobs: it retries the blob deletions a failure (or an
   * eviction) left queued, then runs one retention batch, back soon when the batch was full, else
   * at the next sweep while any policy exists. Each job asks for its next wake through `_wake`,
   * which keeps the earliest; a wake with nothing due costs one cheap check each.
   */
  async alarm(): Promise<void> {
    await this._blobs.collect();
    if (this._retention.all().length === 0) return;
    const settings = retentionSettings(this.env);
    const r: SweepResult = await sweepRetention({
      store: this._retention,
      nowMs: Date.now(),
      settings,
      remove: (tenant, uid) => this._remove(tenant, uid),
    });
    // Counts only: uids and projects are tenant data, not log material.
    writeLogLine({ level: "info", msg: "retention sweep", deleted: r.deleted.length, refused: r.refused.length, more: r.more });
    if (r.more) await this._wake(Date.now() + settings.batchPauseMs);
    else if (this._retention.all().length > 0) await this._wake(Date.now() + settings.sweepMs);
  }

  /** Arms the alarm for `atMs` unless it is already due sooner. */
  private async _wake(atMs: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > atMs) await this.ctx.storage.setAlarm(atMs);
  }

  private async _remove(tenant: string, uid: string): Promise<RemoveResult> {
    const r = await sessionStub(this.env, tenant, uid).delete(tenant);
    if (r.ok) return "deleted";
    return r.reason === "session_not_found" ? "gone" : "refused";
  }
}
