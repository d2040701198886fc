/**
 * Where blobs live (docs/blobs.md): one R2 bucket (the BLOBS binding), keyed per tenant by SHA-256
 * (`tenants/<tenant>/sha256/<hex>`, proto/blob-ref.ts). Content-addressed, so a put of bytes that
 * are already there is skipped, and the same bytes referenced by many records or forks are stored
 * once. Behind this interface so the session and directory logic run in Node tests on an
 * in-memory store (test/node/support/memory-blobs.ts).
 */
import { createHash } from "node:crypto";
import { blobKey, type ExtractedBlob, type Sha256Hex } from "../../proto/blob-ref.js";

export interface StoredBlob {
  size: number;
  body: ReadableStream<Uint8Array>;
}

export interface BlobStore {
  /** Stores the blob unless an object of its length is already under its key. */
  put(tenant: string, blob: ExtractedBlob): Promise<void>;
  /** The blob's bytes as a stream, or undefined when it is not stored. */
  get(tenant: string, sha: Sha256Hex): Promise<StoredBlob | undefined>;
  /** Deletes the blobs (absent ones are fine: deletion is retried). */
  delete(tenant: string, shas: readonly Sha256Hex[]): Promise<void>;
}

/** The minimal slice of R2Bucket this store uses (so Node tests can hand in a fake). */
export interface R2Like {
  head(key: string): Promise<{ size: number } | null>;
  put(key: string, value: Uint8Array, options?: { sha256?: string; httpMetadata?: { contentType?: string } }): Promise<unknown>;
  get(key: string): Promise<{ size: number; body: ReadableStream<Uint8Array> } | null>;
  delete(keys: string | string[]): Promise<void>;
}

export function createR2BlobStore(bucket: R2Like): BlobStore {
  return {
    async put(tenant, blob) {
      const key = blobKey(tenant, blob.sha256);
      const there = await bucket.head(key);
      if (there && there.size === blob.bytes) return;
      // R2 checks the SHA-256 itself and refuses the put when the bytes do not match it.
      await bucket.put(key, blob.data, { sha256: blob.sha256, httpMetadata: { contentType: blob.mime } });
    },
    async get(tenant, sha) {
      const o = await bucket.get(blobKey(tenant, sha));
      return o ? { size: o.size, body: o.body } : undefined;
    },
    async delete(tenant, shas) {
      // R2 deletes at most 1000 keys per call.
      for (let i = 0; i < shas.length; i += 1000) await bucket.delete(shas.slice(i, i + 1000).map((s) => blobKey(tenant, s)));
    },
  };
}

/** Reads a stored blob whole (history for a harness, recovery): its bytes, or undefined when absent. */
export async function readBlob(store: BlobStore, tenant: string, sha: Sha256Hex): Promise<Uint8Array | undefined> {
  const o = await store.get(tenant, sha);
  if (!o) return undefined;
  const out = new Uint8Array(o.size);
  let at = 0;
  const reader = o.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (at + value.length > out.length) throw new Error(`blob sha256:${sha} is longer than its stored size`);
    out.set(value, at);
    at += value.length;
  }
  return at === out.length ? out : out.subarray(0, at);
}

/** What a check of one stored blob found: its length and SHA-256 as read, streamed (never held whole). */
export type BlobCheck = { found: false } | { found: true; bytes: number; sha256: string };

export async function checkBlob(store: BlobStore, tenant: string, sha: Sha256Hex): Promise<BlobCheck> {
  const o = await store.get(tenant, sha);
  if (!o) return { found: false };
  const h = createHash("sha256");
  let bytes = 0;
  const reader = o.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    h.update(value);
    bytes += value.length;
  }
  return { found: true, bytes, sha256: h.digest("hex") };
}

export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}
