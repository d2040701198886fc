/**
 * The tenant Directory's side of blob deletion (docs/blobs.md "Forks and deletion"), over the
 * owner rows (blob-owners-store.ts) and the bucket (objects/blobs/blob-store.ts): owning digests,
 * releasing a deleted session's, and deleting digests nobody owns, in batches, with a retry left
 * armed before each attempt. An owner arriving for a digest whose deletion is in flight waits for
 * it, so the put that follows it cannot be undone. Plain TypeScript so Node tests drive it
 * (test/node/directory/blob-collector.test.ts); objects/directory/object.ts delegates to it.
 */
import type { Sha256Hex } from "../../proto/blob-ref.js";
import type { BlobStore } from "../blobs/blob-store.js";
import type { BlobOwnersStore } from "./blob-owners-store.js";

/** How long after a failed (or interrupted) deletion it is tried again. */
export const BLOB_RETRY_MS = 60_000;
const BATCH = 100;

export class BlobCollector {
  /** Digests whose deletion from the bucket is in flight. */
  private readonly _deleting = new Map<string, Promise<void>>();

  constructor(
    private readonly _owners: BlobOwnersStore,
    private readonly _store: BlobStore | undefined,
    /** Arms the object's alarm `ms` from now; the alarm calls collect(). */
    private readonly _retryIn: (ms: number) => Promise<void>,
  ) {}

  async own(uids: readonly string[], shas: readonly Sha256Hex[]): Promise<void> {
    await Promise.all(shas.map((s) => this._deleting.get(s)).filter((p) => p !== undefined));
    this._owners.own(uids, shas);
  }

  /** Releases what `uid` owned and deletes what that leaves unowned. Idempotent. */
  async release(tenant: string, uid: string): Promise<void> {
    this._owners.release(tenant, uid);
    if (!this._store || this._owners.queued(1).length === 0) return;
    // Armed first, so an eviction or crash in the middle still leaves a retry behind.
    await this._retryIn(BLOB_RETRY_MS);
    await this.collect();
  }

  /** Deletes queued digests nobody owns, in batches; false when a deletion failed (retry armed). */
  async collect(): Promise<boolean> {
    const store = this._store;
    if (!store) return true;
    for (;;) {
      const batch = this._owners.queued(BATCH).filter((q) => !this._deleting.has(q.sha256));
      if (batch.length === 0) return true;
      const byTenant = new Map<string, Sha256Hex[]>();
      for (const q of batch) byTenant.set(q.tenant, [...(byTenant.get(q.tenant) ?? []), q.sha256]);
      const run = (async () => {
        for (const [tenant, shas] of byTenant) await store.delete(tenant, shas);
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
        await this._retryIn(BLOB_RETRY_MS);
        return false;
      } finally {
        for (const q of batch) this._deleting.delete(q.sha256);
      }
    }
  }
}
