/**
 * Approval gates over the tunnel (docs/contract.md §5.3, docs/tunnel.md): an undecided gate parks the
 * execution (exactly one PARKED echoing the ApprovalRef, then nothing, not even END); a decided one,
 * on recovery, is an ApprovalResult frame followed by the receipt.
 */
import { create, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema, Mediation, ToolCallSchema, ToolResult_Code, type Event, type ToolResult } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ApprovalParkedError, isApprovalParkedError } from "../../../sdk/harness/index.js";
import { harnessOf, serveOn } from "./support.js";

const j = (e: Event) => toJson(EventSchema, e) as Record<string, unknown>;
const gated = create(ToolCallSchema, { id: "c1", tool: "refund", args: { amount: 5 }, mediation: Mediation.REQUIRES_APPROVAL, idempotencyKey: "e/c1" });

describe("approvals", () => {
  it("park: the tool call rejects with ApprovalParkedError, exactly one PARKED echoes the ref, then silence", async () => {
    const errors: unknown[] = [];
    let signalReason: unknown;
    const { conn } = await serveOn(
      harnessOf(async (start, sink) => {
        try {
          await sink.toolCall(gated);
        } catch (e) {
          errors.push(e);
        }
        signalReason = start.signal.reason;
        // A harness that carries on after a park: every later call fails with the same park.
        await sink.output("after the park").catch((e: unknown) => errors.push(e));
        // ...and returning normally sends no END either.
      }),
    );
    conn.start("s1", {}, undefined, "e1");
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_TOOL_CALL", tool: { id: "c1", mediation: "MEDIATION_REQUIRES_APPROVAL" } });
    conn.frame("s1", { frame: { case: "park", value: { executionId: "e1", toolCallId: "c1", requestSeq: 12n } } });
    expect(j(await conn.event("s1"))).toEqual({ executionId: "e1", kind: "EVENT_PARKED", parked: { executionId: "e1", toolCallId: "c1", requestSeq: "12" } });
    await conn.silent("s1", 400);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toBeInstanceOf(ApprovalParkedError);
    expect(isApprovalParkedError(errors[0]) && errors[0].ref.requestSeq).toBe(12n);
    expect(errors[1]).toBe(errors[0]);
    expect(signalReason).toBe(errors[0]);
  });

  it("park: a park naming another tool call fails the execution instead", async () => {
    const { conn } = await serveOn(harnessOf(async (_s, sink) => void (await sink.toolCall(gated))));
    conn.start("s1");
    await conn.event("s1");
    conn.frame("s1", { frame: { case: "park", value: { executionId: "exec-s1", toolCallId: "other", requestSeq: 3n } } });
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_END", end: { state: "FAILED" } });
  });

  it("decided gate: an approval frame then the receipt resolves the tool call, and the run completes", async () => {
    let got: ToolResult | undefined;
    const { conn } = await serveOn(harnessOf(async (_s, sink) => void (got = await sink.toolCall(gated))));
    conn.start("s1", {}, undefined, "e1");
    await conn.event("s1");
    conn.frame("s1", { frame: { case: "approval", value: { toolCallId: "c1", approved: false, reason: "too much", requestSeq: 12n } } });
    await conn.silent("s1", 100); // the approval alone answers nothing
    conn.frame("s1", {
      frame: {
        case: "tool",
        value: { id: "c1", isError: true, code: ToolResult_Code.APPROVAL_DENIED, error: "denied", approvalRequestSeq: 12n, approvalDecisionSeq: 14n },
      },
    });
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });
    expect(got).toMatchObject({ id: "c1", isError: true, code: ToolResult_Code.APPROVAL_DENIED, approvalRequestSeq: 12n, approvalDecisionSeq: 14n });
  });

  it("decided gate: a receipt for another request than the approval fails the execution", async () => {
    const { conn } = await serveOn(harnessOf(async (_s, sink) => void (await sink.toolCall(gated))));
    conn.start("s1");
    await conn.event("s1");
    conn.frame("s1", { frame: { case: "approval", value: { toolCallId: "c1", approved: true, requestSeq: 12n } } });
    conn.frame("s1", { frame: { case: "tool", value: { id: "c1", approvalRequestSeq: 99n, approvalDecisionSeq: 100n } } });
    expect(j(await conn.event("s1"))).toMatchObject({
      end: { state: "FAILED", error: { description: 'the receipt of tool call "c1" does not match its approval' } },
    });
  });

  it("decided gate: an approval for another call fails the execution", async () => {
    const { conn } = await serveOn(harnessOf(async (_s, sink) => void (await sink.toolCall(gated))));
    conn.start("s1");
    await conn.event("s1");
    conn.frame("s1", { frame: { case: "approval", value: { toolCallId: "c9", approved: true, requestSeq: 12n } } });
    expect(j(await conn.event("s1"))).toMatchObject({ end: { state: "FAILED" } });
  });
});
