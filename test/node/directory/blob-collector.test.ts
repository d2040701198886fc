/**
 * objects/directory/blob-collector.ts: deletion of unowned blobs is retried until it succeeds (the
 * retry armed before each attempt), and an owner arriving while its digest is being deleted waits
 * for the delete, so the bytes it then stores survive.
 */
import { describe, expect, it } from "vitest";
import type { Sha256Hex } from "../../../proto/blob-ref.js";
import type { BlobStore } from "../../../objects/blobs/blob-store.js";
import { BlobCollector } from "../../../objects/directory/blob-collector.js";
import { BlobOwnersStore } from "../../../objects/directory/blob-owners-store.js";
import { createTestDb } from "../support/sqljs-db.js";

const A = "a".repeat(64) as Sha256Hex;

/** A bucket of digests whose deletes can fail or be held open. */
function bucket() {
  const stored = new Set<string>([A]);
  const b = {
    stored,
    failNext: 0,
    hold: undefined as Promise<void> | undefined,
    store: {
      put: async (_t, blob) => void stored.add(blob.sha256),
      get: async () => undefined,
      delete: async (_t, shas) => {
        if (b.hold) await b.hold;
        if (b.failNext > 0) {
          b.failNext--;
          throw new Error("bucket unavailable");
        }
        for (const s of shas) stored.delete(s);
      },
    } as BlobStore,
  };
  return b;
}

describe("blob collector", () => {
  it("release: a failed delete stays queued with a retry armed, and the retry erases the blob", async () => {
    const b = bucket();
    const alarms: number[] = [];
    const owners = new BlobOwnersStore(createTestDb());
    const c = new BlobCollector(owners, b.store, async (ms) => void alarms.push(ms));
    await c.own(["s1"], [A]);
    b.failNext = 1;
    await c.release("t", "s1");
    expect(b.stored.has(A)).toBe(true);
    expect(owners.queued(10)).toHaveLength(1);
    expect(alarms.length).toBeGreaterThanOrEqual(1);
    expect(await c.collect()).toBe(true);
    expect(b.stored.has(A)).toBe(false);
    expect(owners.queued(10)).toEqual([]);
    // A release that is retried (a DeleteSession retried after a crash) queues nothing again.
    await c.release("t", "s1");
    expect(owners.queued(10)).toEqual([]);
  });

  it("own: waits for an in-flight delete of the same digest, so the put after it is kept", async () => {
    const b = bucket();
    const owners = new BlobOwnersStore(createTestDb());
    const c = new BlobCollector(owners, b.store, async () => undefined);
    await c.own(["old"], [A]);
    let open!: () => void;
    b.hold = new Promise<void>((r) => (open = r));
    const releasing = c.release("t", "old");
    // Let the release reach the bucket's delete, which is now held.
    await new Promise((r) => setTimeout(r, 10));
    let owned = false;
    const owning = c.own(["new"], [A]).then(() => (owned = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(owned).toBe(false);
    open();
    await releasing;
    await owning;
    // The writer stores the bytes after own() returns (objects/blobs/blob-writer.ts).
    await b.store.put("t", { sha256: A, bytes: 1, data: new Uint8Array(1), mime: "" });
    expect(b.stored.has(A)).toBe(true);
    expect(owners.owners(A)).toBe(1);
    expect(owners.queued(10)).toEqual([]);
  });
});
