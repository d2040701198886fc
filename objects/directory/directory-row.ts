/**
 * The row a session reports to its tenant's Directory (directory-store.ts): built here once, for
 * the report after every operation (session/state.ts), a fork child's first report (fork.ts) and
 * the tombstone of a deleted session (session/object.ts).
 */
import { encodeBinary } from "../../proto/binary-writer.js";
import { SessionSchema, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { DirectoryRow } from "./directory-store.js";

export function createDirectoryRow(
  session: Session,
  head: { seq: bigint; hash: string },
  times: { createMs: number; updateMs: number },
  /** The session's binary form, when the caller has already encoded it. */
  bytes: Uint8Array = encodeBinary(SessionSchema, session),
): DirectoryRow {
  return {
    uid: session.metadata?.uid ?? "",
    project: session.metadata?.project ?? "",
    createMs: times.createMs,
    updateMs: times.updateMs,
    headSeq: Number(head.seq),
    headHash: head.hash,
    session: bytes,
  };
}
