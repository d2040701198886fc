/**
 * Renders the wire Session from the stored metadata, the journal head and the live guard.
 *
 * exec_state comes from the journal's projection, refined by whether a turn is actually running in
 * this object: a journal whose latest execution never ended while no turn runs is an interrupted
 * turn, reported FAILED until Resume (or an inputless Exec) recovers it. A parked turn is AWAITING
 * until its receipt; `pending_approval` names its request while it has no decision.
 */
import { create } from "@bufbuild/protobuf";
import { ApprovalRefSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { ExecState, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { Head } from "../journal/journal.js";
import type { SessionMeta } from "./meta-store.js";

export function renderSession(meta: SessionMeta, head: Head, live: boolean): Session {
  // A shallow copy: only top-level fields (and metadata, copied below) differ from the stored
  // statics, and every caller encodes the result without changing it.
  const s: Session = { ...meta.statics };
  s.metadata = {
    ...(s.metadata ?? { $typeName: "agentsessions.v1.ResourceMetadata", project: "", name: "", uid: "", version: 0n }),
    uid: meta.uid,
    createTime: timestampFromMs(meta.createMs),
    updateTime: timestampFromMs(meta.updateMs),
  };
  s.lastSeq = head.seq;
  s.computeState = meta.placement ?? meta.computeState;
  s.execState = execState(meta.execState, live);
  if (meta.pending) {
    const p = meta.pending;
    s.pendingApproval = create(ApprovalRefSchema, { executionId: p.executionId, toolCallId: p.toolCallId, requestSeq: p.requestSeq });
  }
  return s;
}

function execState(projected: ExecState, live: boolean): ExecState {
  // A parked turn is AWAITING until its receipt, whether or not a recovery is underway.
  if (projected === ExecState.EXEC_AWAITING) return projected;
  if (live) return ExecState.EXEC_RUNNING;
  if (projected === ExecState.EXEC_RUNNING) return ExecState.EXEC_FAILED;
  return projected;
}
