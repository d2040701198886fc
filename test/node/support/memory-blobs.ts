/**
 * An in-memory BlobStore (objects/blobs/blob-store.ts) for in-process session tests: the bytes by
 * tenant and digest, and every get counted, so a test can see how many blobs an operation read.
 */
import type { Sha256Hex } from "../../../proto/blob-ref.js";
import type { BlobStore } from "../../../objects/blobs/blob-store.js";

export function memoryBlobs() {
  const blobs = new Map<string, Uint8Array>();
  const gets: string[] = [];
  const key = (tenant: string, sha: Sha256Hex) => `${tenant}/${sha}`;
  const store: BlobStore = {
    async put(tenant, blob) {
      blobs.set(key(tenant, blob.sha256), blob.data.slice());
    },
    async get(tenant, sha) {
      gets.push(sha);
      const data = blobs.get(key(tenant, sha));
      if (!data) return undefined;
      return {
        size: data.length,
        body: new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(data.slice());
            c.close();
          },
        }),
      };
    },
    async delete(tenant, shas) {
      for (const sha of shas) blobs.delete(key(tenant, sha));
    },
  };
  return { store, blobs, gets };
}
