/**
 * objects/request-context.ts with the session core: the placement lines an Exec (and everything
 * it starts, after exec() has returned its stream) writes carry the request id it was called
 * with, and two calls interleaved on two sessions keep their own ids (docs/behaviour.md §6.1, checklist
 * checklist §8.17 #155). SessionObject wraps each call the same way, with the id the Worker passes.
 */
import { describe, expect, it } from "vitest";
import { userText } from "../../../proto/messages.js";
import { currentRequestId, withRequestId } from "../../../objects/request-context.js";
import { createSession, drain, execReq, setup } from "../support/session-fixture.js";

describe("request ids on a session's log lines (checklist §8.17 #155)", () => {
  it("an Exec's placement lines carry its request id; interleaved Execs on two sessions keep theirs", async () => {
    const a = setup();
    const b = setup();
    await createSession(a.host);
    await createSession(b.host);
    const runA = withRequestId("req-a", () => a.host.exec(execReq({ inputs: [userText("one")] })));
    const runB = withRequestId("req-b", () => b.host.exec(execReq({ inputs: [userText("two")] })));
    const [da, db] = await Promise.all([drain(runA), drain(runB)]);
    expect(da.failure).toBeUndefined();
    expect(db.failure).toBeUndefined();
    const placement = (logs: Record<string, unknown>[]) => logs.filter((l) => l.msg === "placement");
    expect(placement(a.logs).length).toBeGreaterThan(0);
    expect(placement(b.logs).length).toBeGreaterThan(0);
    expect(new Set(placement(a.logs).map((l) => l.request_id))).toEqual(new Set(["req-a"]));
    expect(new Set(placement(b.logs).map((l) => l.request_id))).toEqual(new Set(["req-b"]));
  });

  it("outside a call there is no request id, and an empty one starts no context", () => {
    expect(currentRequestId()).toBe("");
    expect(withRequestId("", () => currentRequestId())).toBe("");
    expect(withRequestId("r1", () => withRequestId("r2", () => currentRequestId()))).toBe("r2");
  });
});
