/**
 * objects/directory/blob-owners-store.ts: the owner count behind blob deletion (docs/blobs.md
 * "Deletion"): a digest is queued for deletion only when its last owner is released, an owner
 * arriving takes it off the queue, and release is idempotent (a retried delete queues nothing twice).
 */
import { describe, expect, it } from "vitest";
import type { Sha256Hex } from "../../../proto/blob-ref.js";
import { BlobOwnersStore } from "../../../objects/directory/blob-owners-store.js";
import { createTestDb } from "../support/sqljs-db.js";

const A = "a".repeat(64) as Sha256Hex;
const B = "b".repeat(64) as Sha256Hex;

describe("blob owners", () => {
  it("release: a digest shared by a parent and its fork is queued only when both are released", () => {
    const s = new BlobOwnersStore(createTestDb());
    s.own(["parent"], [A, B]);
    s.own(["child"], [A]);
    s.release("t", "parent");
    expect(s.queued(10).map((q) => q.sha256)).toEqual([B]);
    expect(s.owners(A)).toBe(1);
    s.release("t", "parent");
    expect(s.queued(10)).toHaveLength(1);
    s.release("t", "child");
    expect(s.queued(10)).toEqual([
      { sha256: A, tenant: "t" },
      { sha256: B, tenant: "t" },
    ]);
  });

  it("own: a new owner takes a queued digest off the queue, and deleted() then keeps its row", () => {
    const s = new BlobOwnersStore(createTestDb());
    s.own(["one"], [A]);
    s.release("t", "one");
    expect(s.queued(10)).toHaveLength(1);
    s.own(["two"], [A]);
    expect(s.queued(10)).toEqual([]);
    s.deleted(A);
    expect(s.owners(A)).toBe(1);
    s.release("t", "two");
    s.deleted(A);
    expect(s.queued(10)).toEqual([]);
  });

  it("migrate: a second store on the same database finds its tables (the Directory restarts)", () => {
    const db = createTestDb();
    new BlobOwnersStore(db).own(["x"], [A]);
    expect(new BlobOwnersStore(db).owners(A)).toBe(1);
  });
});
