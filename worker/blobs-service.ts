/**
 * The Blobs service (our extension, proto/agentsessions/edge/v1/blobs.proto; docs/blobs.md): one
 * blob by digest, streamed in chunks. Authorized as Replay is (the read role, the caller's tenant:
 * worker/auth/authorize.ts), and only for a digest the session's own journal references, so a
 * session uid is no key to another session's blobs, in this tenant or any other.
 */
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { parseSha256 } from "../proto/blob-ref.js";
import type { Blobs } from "../proto/gen/agentsessions/edge/v1/blobs_pb.js";
import { createR2BlobStore } from "../objects/blobs/blob-store.js";
import { sessionStub, type Env } from "../objects/index.js";
import { callerOf, noteSession } from "./context.js";
import { connectErrorFrom } from "./errors.js";
import { requireUid } from "./sessions-service.js";

/** Bytes per message: well under every client's default read limit (4 MiB). */
const CHUNK_BYTES = 1024 * 1024;

export function createBlobsService(env: Env): ServiceImpl<typeof Blobs> {
  return {
    async *getBlob(req, ctx) {
      const uid = requireUid(req.session, "session");
      noteSession(ctx, uid);
      const sha = parseSha256(req.sha256);
      if (!sha) throw new ConnectError("sha256 must be 64 lowercase hex characters, optionally prefixed sha256:", Code.InvalidArgument);
      const tenant = callerOf(ctx).tenant;
      const r = await sessionStub(env, tenant, uid).blob(sha);
      if (!r.ok) throw connectErrorFrom(r);
      if (!env.BLOBS) throw new ConnectError("this host has no BLOBS bucket bound: it cannot serve blobs", Code.FailedPrecondition);
      const o = await createR2BlobStore(env.BLOBS).get(tenant, sha);
      if (!o) {
        throw new ConnectError(`blob sha256:${sha} is referenced by session ${uid} but missing from the blob store: run Audit.Verify`, Code.DataLoss);
      }
      let offset = 0;
      let first = true;
      const reader = o.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (let at = 0; at < value.length; at += CHUNK_BYTES) {
            const data = value.subarray(at, Math.min(value.length, at + CHUNK_BYTES));
            yield { data, offset: BigInt(offset), totalBytes: first ? BigInt(o.size) : 0n };
            first = false;
            offset += data.length;
          }
        }
      } finally {
        reader.releaseLock();
      }
      // An empty blob still answers one (empty) chunk carrying its length.
      if (first) yield { data: new Uint8Array(0), offset: 0n, totalBytes: 0n };
    },
  };
}
