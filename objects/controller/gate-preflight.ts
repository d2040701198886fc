/**
 * The recovery preflight for approval gates (checklist §8.14 #117): before Resume mints a fence
 * or runs the harness, every gate of the execution it would re-drive must correlate: the request
 * names its call, the decision names that call and request, the receipt names the call, the
 * request and the decision and agrees with the decision. The record order is the parser's
 * (execution-log.ts `stepGate`); the same checks the recorded sink makes when the harness reaches
 * the gate (recorded-sink.ts `_gate`) are made here first, so a corrupt gate diverges with
 * nothing run and nothing appended. Pure; tested in test/node/controller/approval-paths.test.ts.
 */
import { EventKind, Mediation, ToolResult_Code } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { Execution } from "./execution-log.js";

/** Where and why the execution's gates do not correlate, or undefined when they do. */
export function gateMismatch(ex: Execution): { seq: bigint; detail: string } | undefined {
  const fx = ex.effects;
  for (let i = 0; i < fx.length; i++) {
    const call = fx[i]!;
    if (call.event.kind !== EventKind.EVENT_TOOL_CALL || call.event.body.case !== "tool" || call.event.body.value.mediation !== Mediation.REQUIRES_APPROVAL)
      continue;
    const id = call.event.body.value.id;
    const req = fx[i + 1];
    if (!req) return undefined;
    if (req.event.body.case !== "approval" || req.event.body.value.toolCallId !== id) {
      return { seq: req.seq, detail: `the approval request at seq ${req.seq} does not name gated call ${id}` };
    }
    const dec = fx[i + 2];
    if (!dec) return undefined;
    const d = dec.event.body.case === "approvalResult" ? dec.event.body.value : undefined;
    if (!d || d.toolCallId !== id || d.requestSeq !== req.seq) {
      return { seq: dec.seq, detail: `the decision at seq ${dec.seq} does not name gated call ${id} and its request at seq ${req.seq}` };
    }
    const receipt = fx[i + 3];
    if (!receipt) return undefined;
    const r = receipt.event.body.case === "result" ? receipt.event.body.value : undefined;
    const agrees =
      r !== undefined &&
      r.id === id &&
      r.approvalRequestSeq === req.seq &&
      r.approvalDecisionSeq === dec.seq &&
      (d.approved
        ? (r.code === ToolResult_Code.CODE_UNSPECIFIED && !r.isError) || (r.code === ToolResult_Code.EXECUTOR_ERROR && r.isError)
        : r.code === ToolResult_Code.APPROVAL_DENIED && r.isError);
    if (!agrees) return { seq: receipt.seq, detail: `the receipt at seq ${receipt.seq} does not match approval request ${req.seq} and its decision` };
    i += 3;
  }
  return undefined;
}
