/**
 * Streams (docs/tunnel.md "Streams", docs/contract.md §5.3): each Start runs the harness once, and each
 * sink call becomes the contract's Event on that stream, answered by the matching ControllerFrame.
 */
import { create, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  EventKind,
  EventSchema,
  ToolCallSchema,
  ToolResultSchema,
  UsageSchema,
  Mediation,
  type Event,
  type ToolResult,
} from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText, textOf, userText } from "../../../proto/messages.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import type { FakeConnection } from "./fake-host.js";
import { deferred, harnessOf, serveOn } from "./support.js";

/** The compact proto3 JSON of an event, for readable expectations. */
const j = (e: Event) => toJson(EventSchema, e) as Record<string, unknown>;

/** Answers the model call `ev` the way the echo model does. */
function answerEcho(conn: FakeConnection, stream: string, ev: Event): void {
  if (ev.body.case !== "model") throw new Error(`expected a model call, got kind ${ev.kind}`);
  const text = textOf(ev.body.value.messages.at(-1));
  conn.frame(stream, { frame: { case: "model", value: { message: assistantText("echo:" + text), modelCallId: ev.body.value.id } } });
}

describe("streams", () => {
  it("echo: runs the built-in echo unchanged: one MODEL_CALL, the answer, END COMPLETED", async () => {
    const seen: string[] = [];
    const echo = {
      ...echoHarness,
      run: async (...a: Parameters<typeof echoHarness.run>) => {
        await echoHarness.run(...a);
        seen.push("done");
      },
    };
    const { conn } = await serveOn(echo);
    conn.start("s1", { inputs: [userText("hi")] }, "sess-aaaaaaaaaaaaaaaaaaaaaaaa", "e1");
    const call = await conn.event("s1");
    expect(call.kind).toBe(EventKind.EVENT_MODEL_CALL);
    expect(call.executionId).toBe("e1");
    expect(call.body.case === "model" && call.body.value.model).toBe("echo");
    expect(call.body.case === "model" && textOf(call.body.value.messages[0])).toBe("hi");
    expect(call.body.case === "model" && call.body.value.id).toMatch(/^[0-9a-f]{16}$/);
    answerEcho(conn, "s1", call);
    expect(j(await conn.event("s1"))).toEqual({ executionId: "e1", kind: "EVENT_END", end: { state: "COMPLETED" } });
    expect(seen).toEqual(["done"]);
    await conn.silent("s1");
  });

  it("start: hands run the session, execution, config, history, inputs and cursor", async () => {
    const h = harnessOf(async () => undefined);
    const { conn } = await serveOn(h);
    const history = [create(EventSchema, { executionId: "e0", kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText("before") } })];
    conn.start("s1", { config: new Uint8Array([1, 2, 3]), history, inputs: [userText("now")], resumeFromSeq: 5n }, "sess-bbbbbbbbbbbbbbbbbbbbbbbb", "e9");
    await conn.event("s1");
    const s = h.starts[0]!;
    expect(s.sessionUid).toBe("sess-bbbbbbbbbbbbbbbbbbbbbbbb");
    expect(s.executionId).toBe("e9");
    expect([...s.config]).toEqual([1, 2, 3]);
    expect(s.history.map((e) => textOf(e.body.case === "message" ? e.body.value : undefined))).toEqual(["before"]);
    expect(s.inputs.map(textOf)).toEqual(["now"]);
    expect(s.resumeFromSeq).toBe(5n);
    expect(s.signal.aborted).toBe(false);
  });

  it("output, usage, report: one event each, in call order, then END", async () => {
    const result = create(ToolResultSchema, { id: "t1", output: { ok: true } });
    const { conn } = await serveOn(
      harnessOf(async (_s, sink) => {
        await sink.output("a");
        await sink.usage(create(UsageSchema, { inputTokens: 3n, outputTokens: 4n }));
        await sink.report(result);
      }),
    );
    conn.start("s1");
    expect(j(await conn.event("s1"))).toEqual({
      executionId: "exec-s1",
      kind: "EVENT_OUTPUT",
      message: { role: "assistant", parts: [{ text: { text: "a" } }] },
    });
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_USAGE", usage: { inputTokens: "3", outputTokens: "4" } });
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_TOOL_RESULT", result: { id: "t1", output: { ok: true } } });
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });
  });

  it("model: rejects an answer with another model_call_id and fails the execution", async () => {
    let caught: unknown;
    const { conn } = await serveOn(
      harnessOf(async (_s, sink) => {
        try {
          await sink.model({ model: "echo", messages: [userText("x")] });
        } catch (e) {
          caught = e;
          return; // even a harness that swallows it cannot complete the execution
        }
      }),
    );
    conn.start("s1");
    await conn.event("s1");
    conn.frame("s1", { frame: { case: "model", value: { message: assistantText("?"), modelCallId: "not-yours" } } });
    const end = j(await conn.event("s1"));
    expect(end).toMatchObject({ kind: "EVENT_END", end: { state: "FAILED" } });
    expect(JSON.stringify(end)).toMatch(/answered model call \\"not-yours\\", but the outstanding call is/);
    expect(String(caught)).toMatch(/not-yours/);
    await conn.silent("s1");
  });

  it("model: an answer with nothing outstanding fails the execution", async () => {
    const hold = deferred();
    const { conn } = await serveOn(harnessOf(() => hold.promise));
    conn.start("s1");
    conn.frame("s1", { frame: { case: "model", value: { message: assistantText("?"), modelCallId: "x" } } });
    expect(j(await conn.event("s1"))).toMatchObject({
      kind: "EVENT_END",
      end: { state: "FAILED", error: { description: "the host sent a model result while no model call was outstanding" } },
    });
    hold.resolve();
    await conn.silent("s1");
  });

  it("toolCall: sends TOOL_CALL and resolves with the result of that call", async () => {
    let got: ToolResult | undefined;
    const call = create(ToolCallSchema, { id: "c1", tool: "lookup", args: { q: "x" }, mediation: Mediation.CONTROLLER_MEDIATED, idempotencyKey: "e/c1" });
    const { conn } = await serveOn(harnessOf(async (_s, sink) => void (got = await sink.toolCall(call))));
    conn.start("s1");
    expect(j(await conn.event("s1"))).toEqual({
      executionId: "exec-s1",
      kind: "EVENT_TOOL_CALL",
      tool: { id: "c1", tool: "lookup", args: { q: "x" }, mediation: "MEDIATION_CONTROLLER_MEDIATED", idempotencyKey: "e/c1" },
    });
    conn.frame("s1", { frame: { case: "tool", value: { id: "c1", output: { answer: 42 } } } });
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });
    expect(got?.output).toEqual({ answer: 42 });
  });

  it("toolCall: a result for another call id fails the execution", async () => {
    const { conn } = await serveOn(
      harnessOf(async (_s, sink) => void (await sink.toolCall(create(ToolCallSchema, { id: "c1", tool: "t", idempotencyKey: "k" })))),
    );
    conn.start("s1");
    await conn.event("s1");
    conn.frame("s1", { frame: { case: "tool", value: { id: "c2" } } });
    expect(j(await conn.event("s1"))).toMatchObject({
      end: { state: "FAILED", error: { description: 'the host sent the result of tool call "c2", but the outstanding call is "c1"' } },
    });
  });

  it("run: a rejection sends END FAILED with its message", async () => {
    const { conn } = await serveOn(
      harnessOf(async () => {
        throw new Error("the model refused");
      }),
    );
    conn.start("s1");
    expect(j(await conn.event("s1"))).toEqual({
      executionId: "exec-s1",
      kind: "EVENT_END",
      end: { state: "FAILED", error: { description: "the model refused" } },
    });
  });

  it("sink: calls within a stream are serialized: the second event waits for the first answer", async () => {
    const { conn } = await serveOn(
      harnessOf(async (_s, sink) => {
        const a = sink.model({ model: "echo", messages: [userText("1")] });
        const b = sink.output("after");
        await Promise.all([a, b]);
      }),
    );
    conn.start("s1");
    const call = await conn.event("s1");
    await conn.silent("s1", 200);
    answerEcho(conn, "s1", call);
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_OUTPUT" });
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });
  });

  it("streams: two run at once on one connection, each answered on its own stream", async () => {
    const { conn } = await serveOn(echoHarness);
    conn.start("a", { inputs: [userText("one")] });
    conn.start("b", { inputs: [userText("two")] });
    const [ca, cb] = [await conn.event("a"), await conn.event("b")];
    answerEcho(conn, "b", cb); // answer out of order
    expect(j(await conn.event("b"))).toMatchObject({ executionId: "exec-b", kind: "EVENT_END", end: { state: "COMPLETED" } });
    answerEcho(conn, "a", ca);
    expect(j(await conn.event("a"))).toMatchObject({ executionId: "exec-a", kind: "EVENT_END", end: { state: "COMPLETED" } });
  });

  it("frames: frames for an unknown stream are ignored", async () => {
    const { conn } = await serveOn(echoHarness);
    conn.frame("nope", { frame: { case: "model", value: { modelCallId: "x" } } });
    conn.closeStream("nope");
    conn.start("s1", { inputs: [userText("ok")] });
    answerEcho(conn, "s1", await conn.event("s1"));
    expect(j(await conn.event("s1"))).toMatchObject({ end: { state: "COMPLETED" } });
  });
});
