/**
 * Directory: one Durable Object per tenant holding its session index (ListSessions), the chain
 * heads its sessions reported, and its harness registry (HarnessRegistry; BEHAVIOUR.md §6.4).
 * Thin: the SQL lives in objects/directory/directory-store.ts and registry-store.ts.
 */
import { DurableObject } from "cloudflare:workers";
import { DirectoryStore, type DirectoryRow, type ListResult } from "./directory/directory-store.js";
import { RegistryStore, type HarnessLookup, type HarnessRecord, type RegisterResult, type RetireResult } from "./directory/registry-store.js";
import type { Env } from "./env.js";
import { sqlDbFromStorage } from "./storage/do-sql.js";

export class Directory extends DurableObject<Env> {
  private readonly _store: DirectoryStore;
  private readonly _registry: RegistryStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const db = sqlDbFromStorage(ctx.storage);
    this._store = new DirectoryStore(db);
    this._registry = new RegistryStore(db, () => Date.now());
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

  tombstone(row: DirectoryRow, deletedMs: number): void {
    this._store.tombstone(row, deletedMs);
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
