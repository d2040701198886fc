/**
 * What the inspector shows about a pending gate (ui/gates.ts) and its addresses (ui/routes.ts).
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ApprovalRefSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { deadlineFromReason, gateDetails } from "../../../ui/gates.js";
import { hrefOf, type Route, routeFromHash } from "../../../ui/routes.js";
import { ev, journal } from "./records.js";

describe("approval gates", () => {
  const reason = "tool refund requires approval; denied automatically after 2026-12-01T12:59:54.051Z";

  it("gateDetails: the gated call's tool, arguments and key, the harness that asked, the request's reason and deadline", () => {
    const recs = journal(
      [ev.start("x", "tools"), ev.input("x", "pay"), ev.tool("x", "g1", "refund", { amount: 120.5, currency: "EUR" }), ev.request("x", "g1", reason)],
      [1000, 2000, 3000, 4000],
    );
    const g = gateDetails(create(ApprovalRefSchema, { executionId: "x", toolCallId: "g1", requestSeq: 4n }), recs);
    expect(g).toMatchObject({
      tool: "refund",
      args: { amount: 120.5, currency: "EUR" },
      idempotencyKey: "x/g1",
      callSeq: 3n,
      harness: "tools",
      reason,
      requestedAtMs: 4000,
      deadlineMs: Date.parse("2026-12-01T12:59:54.051Z"),
    });
  });

  it("gateDetails: from only the request and the record before it (the inbox's read), the call is still found", () => {
    const recs = journal([ev.start("x"), ev.tool("x", "g1", "pay", { n: 1 }), ev.request("x", "g1")]).slice(1);
    const g = gateDetails(create(ApprovalRefSchema, { executionId: "x", toolCallId: "g1", requestSeq: 3n }), recs);
    expect(g).toMatchObject({ tool: "pay", args: { n: 1 } });
    expect(g.harness).toBeUndefined();
    expect(g.deadlineMs).toBeUndefined();
  });

  it("deadlineFromReason: only the host's phrasing with an ISO time is a deadline", () => {
    expect(deadlineFromReason("tool x requires approval")).toBeUndefined();
    expect(deadlineFromReason("denied automatically after soon")).toBeUndefined();
    expect(deadlineFromReason(reason)).toBe(Date.parse("2026-12-01T12:59:54.051Z"));
  });
});

describe("addresses", () => {
  const uid = "sess-0123456789abcdef01234567";
  const other = "sess-fedcba9876543210fedcba98";

  it("routeFromHash: /#<uid> opens the session (the link README and CLI print)", () => {
    expect(routeFromHash(`#${uid}`)).toEqual({ view: "session", uid });
    expect(routeFromHash("#sess-nothex")).toMatchObject({ view: "sessions", project: "default" });
    expect(routeFromHash("")).toMatchObject({ view: "sessions" });
  });

  it("hrefOf and routeFromHash: every view's address reads back as the same view", () => {
    const routes: Route[] = [
      { view: "sessions", project: "p", filters: { state: "AWAITING", harness: "tools", label: "team=a", q: "refund" } },
      { view: "sessions", project: "default", filters: { state: "", harness: "", label: "", q: "" } },
      { view: "approvals", project: "ops" },
      { view: "session", uid },
      { view: "session", uid, seq: 12n },
      { view: "tree", uid },
      { view: "compare", uid, other },
    ];
    for (const r of routes) expect(routeFromHash(hrefOf(r))).toEqual(r);
  });
});
