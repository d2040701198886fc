/**
 * The host side of tool calls, shared by the live sink and the recorded sink's live tail
 * (docs/behaviour.md §1.5, §4.11): validation before intent, the intent, the executor, the receipt, and
 * the approval gate (TOOL_CALL + APPROVAL_REQUEST, then park).
 */
import { create } from "@bufbuild/protobuf";
import {
  ApprovalRequestSchema,
  ApprovalResultSchema,
  type ApprovalResult,
  EventKind,
  EventSchema,
  Mediation,
  ToolResult_Code,
  ToolResultSchema,
  type Event,
  type ToolCall,
  type ToolResult,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import { asStored } from "../../proto/canon.js";
import { ApprovalParkedError, MissingToolExecutorError, ToolCallRefusedError, ToolExecutionError } from "./errors.js";
import { toolCallRefusal } from "./tool-args.js";
import type { ToolExecutor } from "./tools.js";
import type { AppendedRecord } from "../journal/journal.js";

/**
 * The decision behind each gate receipt handed to a harness. The wire sends it (an `approval`
 * frame) just before the receipt; in process the harness can ask for it. Never journaled.
 */
const receiptDecisions = new WeakMap<ToolResult, ApprovalResult>();

export function decisionOf(receipt: ToolResult): ApprovalResult | undefined {
  return receiptDecisions.get(receipt);
}

export function noteDecision(receipt: ToolResult, d: { toolCallId: string; approved: boolean; reason: string; requestSeq: bigint }): void {
  receiptDecisions.set(receipt, create(ApprovalResultSchema, d));
}

/** A parked gate: the tuple Approve names, and when (if ever) it fails closed by itself. */
export interface ParkedGate {
  executionId: string;
  toolCallId: string;
  requestSeq: bigint;
  deadlineMs?: number;
}

export interface ToolContext {
  sessionUid: string;
  executionId: string;
  /**
   * The turn's appends (through the live sink, which latches a failed one). Asynchronous: a part
   * over the inline limit is stored as a blob before its record commits (docs/blobs.md).
   */
  writer: { append(events: readonly Event[]): Promise<AppendedRecord[]> };
  signal: AbortSignal;
  tools?: ToolExecutor;
  /** REQUIRES_APPROVAL needs a STATELESS_REPLAY harness (memory harnesses cannot re-run to the gate). */
  approvalsAllowed: boolean;
  /** Deny a gated call by itself after this long without a decision (deployment default). */
  defaultApprovalTimeoutSeconds?: number;
  now: () => number;
  /** Call ids already used by tool calls of this execution (gate ids must be fresh). */
  knownCallIds: Set<string>;
  /** Called after a gate's records commit, so the session can arm its deadline. */
  onPark?: (gate: ParkedGate) => void;
}

/** Refuses a call before anything is recorded; the caller latches the error (the turn fails). */
export function refuseBeforeIntent(ctx: ToolContext, call: ToolCall): ToolCallRefusedError | undefined {
  const r = toolCallRefusal(call);
  if (r) return new ToolCallRefusedError(r.kind, r.detail);
  if (call.mediation !== Mediation.REQUIRES_APPROVAL) return undefined;
  if (!ctx.approvalsAllowed) {
    return new ToolCallRefusedError("approval_unavailable", `tool ${call.tool} requires approval, which needs a STATELESS_REPLAY harness`);
  }
  if (call.id === "" || ctx.knownCallIds.has(call.id)) {
    return new ToolCallRefusedError(
      "invalid_approval_call",
      `an approval-gated call needs an id not used earlier in the execution (got ${JSON.stringify(call.id)})`,
    );
  }
  return undefined;
}

/** Journals the gate (TOOL_CALL then APPROVAL_REQUEST, one transaction) and parks the turn. */
export async function park(ctx: ToolContext, call: ToolCall, timeoutSeconds: number | undefined): Promise<never> {
  const timeout = timeoutSeconds ?? ctx.defaultApprovalTimeoutSeconds;
  const deadlineMs = timeout && timeout > 0 ? ctx.now() + timeout * 1000 : undefined;
  const reason = `tool ${call.tool} requires approval` + (deadlineMs ? `; denied automatically after ${new Date(deadlineMs).toISOString()}` : "");
  ctx.knownCallIds.add(call.id);
  const recs = await ctx.writer.append([
    toolEvent(ctx.executionId, EventKind.EVENT_TOOL_CALL, { case: "tool", value: call }),
    toolEvent(ctx.executionId, EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: create(ApprovalRequestSchema, { toolCallId: call.id, reason }) }),
  ]);
  const gate: ParkedGate = { executionId: ctx.executionId, toolCallId: call.id, requestSeq: recs[1]!.seq, deadlineMs };
  ctx.onPark?.(gate);
  throw new ApprovalParkedError(gate);
}

/** Journals the intent of a CONTROLLER_MEDIATED call, then runs it. */
export async function recordAndExecute(ctx: ToolContext, call: ToolCall): Promise<ToolResult> {
  ctx.knownCallIds.add(call.id);
  await ctx.writer.append([toolEvent(ctx.executionId, EventKind.EVENT_TOOL_CALL, { case: "tool", value: call })]);
  return execute(ctx, call);
}

/**
 * Runs a recorded intent through the executor and journals the receipt with the call's id. An
 * executor failure is handed to the harness (no receipt is written; the harness may handle it).
 */
export async function execute(ctx: ToolContext, call: ToolCall): Promise<ToolResult> {
  if (!ctx.tools) throw new MissingToolExecutorError();
  const result = await ctx.tools.execute({ sessionUid: ctx.sessionUid, executionId: ctx.executionId, call }, ctx.signal);
  if (ctx.signal.aborted) throw ctx.signal.reason;
  // The receipt as the journal will hold it, for the harness too (proto/canon.ts asStored).
  const receipt = asStored(
    ToolResultSchema,
    create(ToolResultSchema, { ...result, id: call.id, code: ToolResult_Code.CODE_UNSPECIFIED, approvalRequestSeq: 0n, approvalDecisionSeq: 0n }),
  );
  await ctx.writer.append([toolEvent(ctx.executionId, EventKind.EVENT_TOOL_RESULT, { case: "result", value: receipt })]);
  return receipt;
}

/**
 * Completes a decided gate (recovery): a denial becomes an APPROVAL_DENIED receipt without the
 * executor; an approval runs the executor once, and its failure becomes an EXECUTOR_ERROR receipt.
 */
export async function completeGate(
  ctx: ToolContext,
  call: ToolCall,
  requestSeq: bigint,
  decision: { approved: boolean; reason: string; seq: bigint },
): Promise<ToolResult> {
  const seqs = { approvalRequestSeq: requestSeq, approvalDecisionSeq: decision.seq };
  let receipt: ToolResult;
  if (!decision.approved) {
    const why = decision.reason ? `: ${decision.reason}` : "";
    receipt = create(ToolResultSchema, {
      id: call.id,
      isError: true,
      error: `the call was denied${why}`,
      code: ToolResult_Code.APPROVAL_DENIED,
      content: [{ part: { case: "text", value: { text: `Execution of ${call.tool} was denied${why}. The tool did not run.` } } }],
      ...seqs,
    });
  } else {
    if (!ctx.tools) throw new MissingToolExecutorError();
    try {
      const result = await ctx.tools.execute({ sessionUid: ctx.sessionUid, executionId: ctx.executionId, call }, ctx.signal);
      receipt = asStored(
        ToolResultSchema,
        create(ToolResultSchema, {
          ...result,
          id: call.id,
          code: result.isError ? ToolResult_Code.EXECUTOR_ERROR : ToolResult_Code.CODE_UNSPECIFIED,
          ...seqs,
        }),
      );
    } catch (e) {
      if (!(e instanceof ToolExecutionError)) throw e;
      receipt = create(ToolResultSchema, { id: call.id, isError: true, error: e.message, code: ToolResult_Code.EXECUTOR_ERROR, ...seqs });
    }
  }
  if (ctx.signal.aborted) throw ctx.signal.reason;
  await ctx.writer.append([toolEvent(ctx.executionId, EventKind.EVENT_TOOL_RESULT, { case: "result", value: receipt })]);
  noteDecision(receipt, { toolCallId: call.id, approved: decision.approved, reason: decision.reason, requestSeq });
  return receipt;
}

/** A harness report may not carry host-owned receipt fields (ErrApprovalReceiptReport). */
export function reportRefusal(result: ToolResult): string | undefined {
  if (result.approvalRequestSeq !== 0n || result.approvalDecisionSeq !== 0n || result.code === ToolResult_Code.APPROVAL_DENIED) {
    return "a reported tool result may not carry approval receipt fields: only the host writes receipts";
  }
  return undefined;
}

export function toolEvent(executionId: string, kind: EventKind, body: Event["body"]): Event {
  return create(EventSchema, { executionId, kind, body });
}
