/**
 * Deciding an approval gate from the page, as `agentctl approve`/`deny` do (docs/tools.md): commit
 * the decision with Approve, then Resume so the turn continues (approved: the executor runs the
 * call once; denied: an APPROVAL_DENIED receipt). The two steps fail apart: once the decision is
 * committed it stays committed, and a failed Resume is reported as such with a retry.
 */
import type { ApprovalRef } from "../proto/gen/agentsessions/v1/common_pb.js";
import type { Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { api } from "./api.js";

export type Decision =
  | { committed: false; error: unknown }
  | { committed: true; seq: bigint; approved: boolean; resumed: Session }
  | { committed: true; seq: bigint; approved: boolean; resumeError: unknown };

export type GateRef = Pick<ApprovalRef, "executionId" | "toolCallId" | "requestSeq">;

export async function decide(uid: string, ref: GateRef, approved: boolean, reason: string): Promise<Decision> {
  let seq: bigint;
  let recorded = approved;
  try {
    const r = await api().approve(uid, { executionId: ref.executionId, toolCallId: ref.toolCallId, requestSeq: ref.requestSeq, approved, reason });
    if (!r.decision) throw new Error("the server committed no decision record");
    seq = r.decision.seq;
    const b = r.decision.event?.body;
    if (b?.case === "approvalResult") recorded = b.value.approved;
  } catch (error) {
    return { committed: false, error };
  }
  const resumed = await resume(uid);
  return "session" in resumed
    ? { committed: true, seq, approved: recorded, resumed: resumed.session }
    : { committed: true, seq, approved: recorded, resumeError: resumed.error };
}

/** Resume after a committed decision (also the retry). */
export async function resume(uid: string): Promise<{ session: Session } | { error: unknown }> {
  try {
    return { session: await api().resume(uid) };
  } catch (error) {
    return { error };
  }
}
