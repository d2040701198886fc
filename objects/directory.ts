/**
 * Directory: one Durable Object per tenant holding its session index (ListSessions), the chain
 * heads its sessions reported, and its harness registry (HarnessRegistry; BEHAVIOUR.md §6.4).
 * Thin: the SQL lives in objects/directory/directory-store.ts and registry-store.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { Sha256Hex } from "../proto/blob-ref.js";
import { createR2BlobStore, type BlobStore } from "./blobs/blob-store.js";
import { BlobOwnersStore } from "./directory/blob-owners-store.js";
import { DirectoryStore, type DirectoryRow, type ListResult } from "./directory/directory-store.js";
import { RegistryStore, type HarnessLookup, type HarnessRecord, type RegisterResult, type RetireResult } from "./directory/registry-store.js";
import type { Env } from "./env.js";
import { sqlDbFromStorage } from "./storage/do-sql.js";

export class Directory extends DurableObject<Env> {
  private readonly _store: DirectoryStore;
  private readonly _registry: RegistryStore;
  private readonly _owners: BlobOwnersStore;
  private readonly _blobs: BlobStore | undefined;
  /** Digests whose deletion from the bucket is in flight: an owner arriving now waits for it. */
  private readonly _deleting = new Map<string, Promise<void>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const db = sqlDbFromStorage(ctx.storage);
    this._store = new DirectoryStore(db);
    this._registry = new RegistryStore(db, () => Date.now());
    this._owners = new BlobOwnersStore(db);
    this._blobs = env.BLOBS && createR2BlobStore(env.BLOBS);
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
    if (!tenant) return;
    this._owners.release(tenant, row.uid);
    await this._collect();
  }

  /**
   * Counts each session of `uids` as an owner of each digest, before the bytes are stored or a
   * record names them. Waits out a deletion of the same digest already in flight, so the put that
   * follows cannot be undone by it.
   */
  async ownBlobs(uids: string[], shas: Sha256Hex[]): Promise<void> {
    await Promise.all(shas.map((s) => this._deleting.get(s)).filter((p) => p !== undefined));
    this._owners.own(uids, shas);
  }

  /** Releases what `uid` owns without a tombstone: a fork child that was discarded. */
  async releaseBlobs(tenant: string, uid: string): Promise<void> {
    this._owners.release(tenant, uid);
    await this._collect();
  }

  /** Retries the blob deletions a failure left queued. */
  async alarm(): Promise<void> {
    await this._collect();
  }

  /** Deletes queued digests nobody owns, in batches; a failure re-arms the alarm to retry. */
  private async _collect(): Promise<void> {
    if (!this._blobs) return;
    for (;;) {
      const batch = this._owners.queued(100).filter((q) => !this._deleting.has(q.sha256));
      if (batch.length === 0) return;
      const byTenant = new Map<string, Sha256Hex[]>();
      for (const q of batch) byTenant.set(q.tenant, [...(byTenant.get(q.tenant) ?? []), q.sha256]);
      const run = (async () => {
        for (const [tenant, shas] of byTenant) await this._blobs!.delete(tenant, shas);
      })();
      const settled = run.then(
        () => undefined,
        () => undefined,
      );
      for (const q of batch) this._deleting.set(q.sha256, settled);
      try {
        await run;
        for (const q of batch) this._owners.deleted(q.sha256);
      } catch {
        await this.ctx.storage.setAlarm(Date.now() + 60_000);
        return;
      } finally {
        for (const q of batch) this._deleting.delete(q.sha256);
      }
    }
  }

  head(uid: string): { seq: number; hash: string; deletedMs?: number } | undefined {
    return this._store.head(uid);
  }

  // The harness registry. The Worker validated the name and spec and computed the digest.

  registerHarness(name: string, spec: Uint8Array, specDigest: string): RegisterResult {
    return this._registry.register(name, spec, specDigest);
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
}
