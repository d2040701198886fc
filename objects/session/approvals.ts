/**
 * Approve and approval deadlines (docs/behaviour.md §4.11; docs/design.md §7).
 *
 * Approve commits only the decision (APPROVAL_RESULT, CAS on the head it validated): no harness,
 * no compute. An exact retry returns the original record, a changed one is refused. The deadline
 * alarm records a decision that fails closed, attributed to the system and saying it expired, and
 * then completes the turn through the denial path. Alarms are at-least-once, so every step checks
 * what is already journaled first.
 * @internal
 */
import { create, equals } from "@bufbuild/protobuf";
import { EventKind, EventSchema, IdentityRefSchema, type Event, type IdentityRef } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { checkInputs, latestExecution, type ParsedLog } from "../controller/execution-log.js";
import type { StoredRecord } from "../journal/journal.js";
import { busy, notFound, refusalFailure } from "./failures.js";
import { failure, success, type Outcome } from "./outcomes.js";
import type { SessionState } from "./state.js";
import { resumeSession } from "./turns.js";

export interface Decision {
  executionId: string;
  toolCallId: string;
  requestSeq: bigint;
  approved: boolean;
  reason: string;
  identity?: IdentityRef;
}

/** Who decides when nobody did in time. */
export const DEADLINE_ACTOR = "system:approval-deadline";

export function approveGate(s: SessionState, d: Decision): Outcome<{ session: Session; decision: StoredRecord }> {
  if (!s.exists()) return notFound();
  if (s.live) return busy();
  const parsed = s.parsedLog();
  if (!parsed.ok) return failure("invalid_log", `the journal cannot carry a decision as it stands: ${parsed.detail}`);
  const invalid = (why: string) => failure("invalid_decision", `${why}; nothing was recorded`);

  // An exact retry returns the original record, even after the receipt, END or later turns.
  const prior = s.cache.decision(d.executionId, d.toolCallId, d.requestSeq);
  if (prior) {
    if (sameDecision(prior.event, d)) return success({ session: s.render(), decision: recordAt(s, prior.seq) });
    return invalid(`tool call ${d.toolCallId} was already decided at seq ${prior.seq} with a different decision, reason or identity`);
  }
  const latest = latestExecution(parsed);
  if (!latest || latest.id !== d.executionId) return invalid(`execution ${d.executionId} is not the session's latest execution`);
  // docs/behaviour.md §2.6: a gated execution whose input count does not match its INPUTs is no basis for a decision.
  const inputs = checkInputs(latest);
  if (!inputs.ok) return failure("invalid_log", `the journal cannot carry a decision as it stands: ${inputs.detail}`);
  const request = latest.effects.find(
    (e) =>
      e.seq === d.requestSeq &&
      e.event.kind === EventKind.EVENT_APPROVAL_REQUEST &&
      e.event.body.case === "approval" &&
      e.event.body.value.toolCallId === d.toolCallId,
  );
  if (!request) return invalid(`there is no approval request for tool call ${d.toolCallId} at seq ${d.requestSeq} in execution ${d.executionId}`);
  const meta = s.meta.load()!;
  if (meta.statics.parentUid && d.requestSeq <= meta.statics.forkSeq) {
    return invalid(`the request at seq ${d.requestSeq} was inherited from the fork parent ${meta.statics.parentUid}; decide it there, or Exec a new turn here`);
  }
  if (
    latest.endState !== undefined ||
    latest.effects.some(
      (e) => e.event.kind === EventKind.EVENT_TOOL_RESULT && e.event.body.case === "result" && e.event.body.value.approvalRequestSeq === d.requestSeq,
    )
  ) {
    return invalid(`the request at seq ${d.requestSeq} is already resolved`);
  }
  const actor = d.identity && (d.identity.principal || d.identity.issuer || d.identity.subject) ? d.identity : undefined;
  const decision = create(EventSchema, {
    executionId: d.executionId,
    kind: EventKind.EVENT_APPROVAL_RESULT,
    body: { case: "approvalResult", value: { toolCallId: d.toolCallId, approved: d.approved, reason: d.reason, requestSeq: d.requestSeq } },
    actor,
  });
  // CAS on the head just validated; the fence is minted only now, after validation.
  const r = s.append([decision], { expectedSeq: s.journal.head().seq, fence: 0n, mintFence: true });
  if (!r.ok) return refusalFailure(r);
  void s.rearm();
  void s.reports.afterChange();
  const rec = r.records[0]!;
  return success({ session: s.render(), decision: { seq: rec.seq, prevHash: rec.prevHash, hash: rec.hash, fence: rec.fence, event: rec.event } });
}

/**
 * The alarm: deny the pending approval if its deadline passed (once), then finish a turn the
 * deadline denied (once: its receipt is what a second alarm finds). Re-arms for a later deadline.
 */
export async function onApprovalAlarm(s: SessionState): Promise<void> {
  if (!s.exists()) return;
  if (s.live) {
    // A recovery is running; look again shortly rather than race it.
    await s.d.setAlarm?.(s.d.now() + 1_000);
    return;
  }
  const p = s.meta.load()!.pending;
  if (p?.deadlineMs !== undefined) {
    if (s.d.now() < p.deadlineMs) {
      await s.d.setAlarm?.(p.deadlineMs);
      return;
    }
    const r = approveGate(s, {
      executionId: p.executionId,
      toolCallId: p.toolCallId,
      requestSeq: p.requestSeq,
      approved: false,
      reason: `no decision before the approval deadline (${new Date(p.deadlineMs).toISOString()}): denied automatically`,
      identity: create(IdentityRefSchema, { principal: DEADLINE_ACTOR }),
    });
    if (!r.ok) return;
  }
  if (deadlineDecisionAwaitingReceipt(s.parsedLog())) {
    // If this recovery dies halfway, the alarm comes back and finds the decision without a receipt.
    await s.d.setAlarm?.(s.d.now() + RECOVERY_RETRY_MS);
    const r = await resumeSession(s, { marker: false });
    if (r.ok) await s.rearm();
  }
}

const RECOVERY_RETRY_MS = 30_000;

/** The latest execution's gate was denied by the deadline and has no receipt yet. */
function deadlineDecisionAwaitingReceipt(parsed: ParsedLog): boolean {
  if (!parsed.ok) return false;
  const latest = latestExecution(parsed);
  if (!latest || latest.endState !== undefined) return false;
  const decision = [...latest.effects].reverse().find((e) => e.event.kind === EventKind.EVENT_APPROVAL_RESULT);
  if (!decision || decision.event.actor?.principal !== DEADLINE_ACTOR) return false;
  const requestSeq = decision.event.body.case === "approvalResult" ? decision.event.body.value.requestSeq : 0n;
  return !latest.effects.some((e) => e.event.body.case === "result" && e.event.body.value.approvalRequestSeq === requestSeq);
}

/** Same approved, reason and identity; an omitted identity equals an all-empty one. */
function sameDecision(ev: Event, d: Decision): boolean {
  if (ev.body.case !== "approvalResult") return false;
  const v = ev.body.value;
  const a = ev.actor ?? create(IdentityRefSchema);
  const b = d.identity ?? create(IdentityRefSchema);
  return (
    v.approved === d.approved &&
    v.reason === d.reason &&
    equals(IdentityRefSchema, a, create(IdentityRefSchema, { principal: b.principal, issuer: b.issuer, subject: b.subject }))
  );
}

function recordAt(s: SessionState, seq: bigint): StoredRecord {
  return s.journal.read(seq, seq, 1)[0]!;
}
