/**
 * What a harness is handed from a journal that holds blob references (docs/blobs.md): every
 * reference resolved, live and in recovery, and only what it is handed is read from the store: a
 * turn's history from its latest compaction point on, a recovery's latest execution and its
 * history, never every blob the session ever stored.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, ToolResultSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { blobRefsOf } from "../../../proto/blob-ref.js";
import { userText } from "../../../proto/messages.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import { compactionMarker } from "../../../runtimes/compaction.js";
import { fakeExecutor } from "../support/controller-fixture.js";
import { memoryBlobs } from "../support/memory-blobs.js";
import { createSession, drain, execReq, inject, sessionOf, setup, stateOf } from "../support/session-fixture.js";

const config = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const ev = (executionId: string, kind: EventKind, body: { case: string | undefined; value?: unknown }): Event =>
  create(EventSchema, { executionId, kind, body: body as never });

/** A session on the `tools` harness whose executor answers each call with `size` bytes of its own text. */
async function blobSession(size = 2000) {
  const blobs = memoryBlobs();
  let n = 0;
  const ex = fakeExecutor(() => create(ToolResultSchema, { content: [{ part: { case: "text", value: { text: `${n++}`.padEnd(size, "r") } } }] }));
  const fx = setup({ tools: toolsHarness }, undefined, { tools: ex.executor, blobs: { store: blobs.store, maxInline: 1024 } });
  const uid = await createSession(fx.host, "tools");
  const turn = async (o: unknown) => {
    const { updates, failure } = await drain(fx.host.exec(execReq({ session: uid, inputs: [userText("go")], config: config(o) })));
    expect(failure).toBeUndefined();
    const out = updates.flatMap((u) =>
      u.update.case === "record" && u.update.value.event!.kind === EventKind.EVENT_OUTPUT && u.update.value.event!.body.case === "message"
        ? u.update.value.event!.body.value.parts.map((p) => (p.part.case === "text" ? p.part.value.text : ""))
        : [],
    );
    return out.join("\n").split("\n");
  };
  return { ...fx, blobs, uid, turn, ex };
}

/** A compaction through everything so far: its summary, then its marker (docs/history.md). */
function compact(host: Parameters<typeof stateOf>[0]): void {
  const head = stateOf(host).journal.head().seq;
  const id = `compacting-${head}`;
  inject(host, [
    ev(id, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 0n, harness: "tools" } }),
    ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText("summary of the lookups") }),
    compactionMarker(id, head),
    ev(id, EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } }),
  ]);
}

const stored = (host: Parameters<typeof stateOf>[0]) =>
  stateOf(host)
    .loggedEvents()
    .filter((e) => blobRefsOf(e.event).length > 0).length;

describe("blob references in history", () => {
  it("history: a turn gets every result of its history whole, reading each blob it is handed once", async () => {
    const { turn, blobs, host } = await blobSession();
    const first = await turn({ calls: [{ tool: "look" }], digest: true });
    expect(first).toEqual([expect.stringMatching(/^look: ok CODE_UNSPECIFIED sha256=[0-9a-f]{64} bytes=2000$/)]);
    expect(stored(host)).toBe(1);
    const digest = first[0]!.split(" ").slice(3).join(" ");
    await turn({ calls: [{ tool: "look" }], digest: true });
    const before = blobs.gets.length;
    const third = await turn({ calls: [], digest: true });
    // Both earlier results, whole, from two reads of the store.
    expect(third.filter((l) => l.startsWith("history tool_result:"))).toHaveLength(2);
    expect(third).toContain(`history tool_result: ${digest}`);
    expect(blobs.gets.length - before).toBe(2);
  });

  it("history: blobs before the latest compaction point are not read: the turn is not handed them", async () => {
    const { turn, blobs, host } = await blobSession();
    for (let i = 0; i < 3; i++) await turn({ calls: [{ tool: "look" }], digest: true });
    compact(host);
    const before = blobs.gets.length;
    const after = await turn({ calls: [], digest: true });
    expect(after.filter((l) => l.startsWith("history tool_result:"))).toEqual([]);
    expect(blobs.gets.length - before).toBe(0);
    // The next turn is handed the blobs written after the point, and reads only those.
    await turn({ calls: [{ tool: "look" }], digest: true });
    const next = blobs.gets.length;
    expect((await turn({ calls: [], digest: true })).filter((l) => l.startsWith("history tool_result:"))).toHaveLength(1);
    expect(blobs.gets.length - next).toBe(1);
  });

  it("recovery: an approved gate whose call carries a blob is re-driven with it whole, and the history with its results whole", async () => {
    const { turn, blobs, host, uid, ex } = await blobSession();
    // Two results before a compaction point, one after it.
    for (let i = 0; i < 2; i++) await turn({ calls: [{ tool: "look" }], digest: true });
    compact(host);
    await turn({ calls: [{ tool: "look" }], digest: true });
    const big = "a".repeat(3000);
    const parked = await drain(
      host.exec(
        execReq({
          session: uid,
          inputs: [userText("pay")],
          config: config({ calls: [{ id: "g1", tool: "pay", args: { note: big }, mediation: "REQUIRES_APPROVAL" }], digest: true }),
        }),
      ),
    );
    expect(parked.failure).toBeUndefined();
    const call = stateOf(host)
      .loggedEvents()
      .find((e) => e.event.kind === EventKind.EVENT_TOOL_CALL && e.event.body.case === "tool" && e.event.body.value.id === "g1")!;
    expect(blobRefsOf(call.event)).toHaveLength(1);
    const p = sessionOf(host).pendingApproval!;
    expect(host.approve({ executionId: p.executionId, toolCallId: p.toolCallId, requestSeq: p.requestSeq, approved: true, reason: "ok" }).ok).toBe(true);
    const before = blobs.gets.length;
    const resumed = await host.resume();
    expect(resumed.ok).toBe(true);
    // The executor got the whole argument, and the harness its history whole.
    const last = ex.calls[ex.calls.length - 1]!;
    expect(last.call.tool).toBe("pay");
    expect(last.call.args?.note).toBe(big);
    const out = stateOf(host)
      .loggedEvents()
      .filter((e) => e.event.kind === EventKind.EVENT_OUTPUT)
      .at(-1)!.event;
    const text = out.body.case === "message" ? out.body.value.parts.map((x) => (x.part.case === "text" ? x.part.value.text : "")).join("") : "";
    expect(text.split("\n").filter((l) => l.startsWith("history tool_result:"))).toHaveLength(1);
    // The call's blob and the one result after the compaction point: nothing else the session stored.
    expect(blobs.gets.length - before).toBe(2);
  });
});
