/**
 * The host's half of "large parts out of the row" (docs/blobs.md): before a record commits, each
 * part over BLOB_INLINE_MAX_BYTES is stored content-addressed and the record carries its reference
 * (proto/blob-ref.ts). Order matters for deletion: the tenant's Directory counts this session as
 * an owner of the digest first, then the bytes are stored, then (the caller) the record commits.
 * A crash between the steps leaves at worst an owner count the session's deletion releases, never
 * a record naming a blob that is not stored or that a concurrent deletion may remove.
 * Used by objects/session/state.ts; tested in test/node/blobs/blob-writer.test.ts.
 */
import { externalizeEvent, type ExtractedBlob, type Sha256Hex } from "../../proto/blob-ref.js";
import type { Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { AppendRefusedError } from "../controller/errors.js";
import type { EventExternalizer } from "../controller/turn-writer.js";
import { sha256Hex, type BlobStore } from "./blob-store.js";

export interface BlobWriterOptions {
  tenant: string;
  /** Parts over this many bytes are stored as blobs. */
  maxInline: number;
  store: BlobStore;
  /** Counts this session as an owner of the digests in its tenant's Directory (idempotent). */
  own: (shas: Sha256Hex[]) => Promise<void>;
}

export function createBlobWriter(o: BlobWriterOptions): EventExternalizer {
  return {
    async externalize(events: readonly Event[]): Promise<readonly Event[]> {
      let out: Event[] | undefined;
      const blobs = new Map<string, ExtractedBlob>();
      for (let i = 0; i < events.length; i++) {
        const r = externalizeEvent(events[i]!, o.maxInline, sha256Hex);
        if (!r.ok) throw new AppendRefusedError({ ok: false, reason: "invalid_event", index: i, detail: r.detail });
        if (r.blobs.length === 0) continue;
        (out ??= events.slice())[i] = r.event;
        for (const b of r.blobs) blobs.set(b.sha256, b);
      }
      if (!out) return events;
      await o.own([...blobs.keys()] as Sha256Hex[]);
      for (const b of blobs.values()) await o.store.put(o.tenant, b);
      return out;
    },
  };
}
