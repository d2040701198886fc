/**
 * Directory: one Durable Object per tenant holding its session index (ListSessions), the chain
 * heads its sessions reported, and its harness registry (HarnessRegistry; BEHAVIOUR.md §6.4).
 * Thin: the SQL lives in objects/directory/directory-store.ts and registry-store.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { Sha256Hex } from "../proto/blob-ref.js";
import { createR2BlobStore } from "./blobs/blob-store.js";
import { BlobCollector } from "./directory/blob-collector.js";
import { BlobOwnersStore } from "./directory/blob-owners-store.js";
import { DirectoryStore, type DirectoryRow, type ListResult } from "./directory/directory-store.js";
import { RegistryStore, type HarnessLookup, type HarnessRecord, type RegisterResult, type RetireResult } from "./directory/registry-store.js";
import type { Env } from "./env.js";
import { sqlDbFromStorage } from "./storage/do-sql.js";

export class Directory extends DurableObject<Env> {
  private readonly _store: DirectoryStore;
  private readonly _registry: RegistryStore;
  private readonly _blobs: BlobCollector;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const db = sqlDbFromStorage(ctx.storage);
    this._store = new DirectoryStore(db);
    this._registry = new RegistryStore(db, () => Date.now());
    this._blobs = new BlobCollector(new BlobOwnersStore(db), env.BLOBS && createR2BlobStore(env.BLOBS), (ms) => ctx.storage.setAlarm(Date.now() + ms));
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

  /** Retries the blob deletions a failure (or an eviction) left queued. */
  async alarm(): Promise<void> {
    await this._blobs.collect();
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
}
