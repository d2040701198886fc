/**
 * Directory: one Durable Object per tenant holding its session index (ListSessions) and the chain
 * heads its sessions reported. Thin: the SQL lives in objects/directory/directory-store.ts.
 */
import { DurableObject } from "cloudflare:workers";
import { DirectoryStore, type DirectoryRow, type ListResult } from "./directory/directory-store.js";
import type { Env } from "./env.js";
import { sqlDbFromStorage } from "./storage/do-sql.js";

export class Directory extends DurableObject<Env> {
  private readonly _store: DirectoryStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this._store = new DirectoryStore(sqlDbFromStorage(ctx.storage));
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
}
