/**
 * The Audit service (our extension, proto/agentsessions/edge/v1/audit.proto): verify a session's
 * chain on the host, against the head its tenant's Directory anchored, and optionally replay every
 * completed execution with zero model calls. Read-only.
 */
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Audit } from "../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { directoryStub, sessionStub, type Env } from "../objects/index.js";
import { callerOf, noteSession } from "./context.js";
import { connectErrorFrom } from "./errors.js";
import { requireUid } from "./sessions-service.js";

export function createAuditService(env: Env): ServiceImpl<typeof Audit> {
  return {
    async verify(req, ctx) {
      const uid = requireUid(req.session, "session");
      noteSession(ctx, uid);
      const tenant = callerOf(ctx).tenant;
      const anchor = await directoryStub(env, tenant).head(uid);
      const r = await sessionStub(env, tenant, uid).audit(req.replay, anchor);
      if (!r.ok && r.reason === "session_not_found" && anchor?.deletedMs !== undefined) {
        // Deletion, not loss: the Directory kept the final head when the session was erased.
        throw new ConnectError(
          `session ${uid} was deleted at ${new Date(anchor.deletedMs).toISOString()}; its final head was seq ${anchor.seq}, hash ${anchor.hash || "(empty journal)"}`,
          Code.NotFound,
        );
      }
      if (!r.ok) throw connectErrorFrom(r);
      const { chain, replay, blobs } = r.value;
      return {
        chainOk: chain.ok,
        records: chain.records,
        firstBadSeq: chain.firstBadSeq,
        headHash: chain.headHash,
        chainDetail: chain.reason,
        replayOk: replay?.ok ?? false,
        outputs: replay?.outputs ?? [],
        divergence: replay?.divergence ?? "",
        modelCalls: BigInt(replay?.modelCalls ?? 0),
        blobsOk: blobs.ok,
        blobsChecked: BigInt(blobs.checked),
        blobDetail: blobs.detail,
      };
    },
  };
}
