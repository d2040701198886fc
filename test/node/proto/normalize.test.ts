/**
 * The journal's normal form of an event (docs/contract.md §7.3).
 */
import { create, fromJson, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema, type EventKind, type Lifecycle_Kind, type Mediation, type ToolResult_Code } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { normalizeEvent } from "../../../proto/normalize.js";

const json = (ev: ReturnType<typeof normalizeEvent>) => toJson(EventSchema, ev, { useProtoFieldName: true });

describe("normalizeEvent", () => {
  it("normalize: drops an all-empty actor but keeps a set one", () => {
    const ev = create(EventSchema, { kind: 3, actor: {} });
    expect(json(normalizeEvent(ev))).toEqual({ kind: "EVENT_OUTPUT" });
    const kept = create(EventSchema, { kind: 3, actor: { principal: "p" } });
    expect(json(normalizeEvent(kept))).toEqual({ kind: "EVENT_OUTPUT", actor: { principal: "p" } });
  });

  it("normalize: strips ModelCall messages, tools and tool_choice, keeping model, params, input_hash, id", () => {
    const ev = fromJson(EventSchema, {
      kind: "EVENT_MODEL_CALL",
      model: {
        model: "m",
        params: { t: "1" },
        input_hash: "h",
        id: "i",
        messages: [{ role: "user" }],
        tools: [{ name: "x" }],
        tool_choice: { mode: "MODE_AUTO" },
      },
    });
    expect(json(normalizeEvent(ev))).toEqual({
      kind: "EVENT_MODEL_CALL",
      model: { model: "m", params: { t: "1" }, input_hash: "h", id: "i" },
    });
  });

  it("normalize: collapses empty file sources, empty opaque blobs and unset data parts", () => {
    const ev = create(EventSchema, {
      kind: 3,
      body: {
        case: "message",
        value: {
          role: "assistant",
          parts: [
            { part: { case: "file", value: { mime: "a/b", source: { case: "bytes", value: new Uint8Array() } } } },
            { part: { case: "reasoning", value: { provider: "p", opaque: { case: "opaqueUri", value: "" } } } },
            { part: { case: "data", value: {} } },
          ],
        },
      },
    });
    expect(json(normalizeEvent(ev))).toEqual({
      kind: "EVENT_OUTPUT",
      message: { role: "assistant", parts: [{ file: { mime: "a/b" } }, { reasoning: { provider: "p" } }, {}] },
    });
  });

  it("normalize: unknown EventKind, Mediation and Lifecycle.Kind numbers collapse to 0; unknown ToolResult.Code is kept", () => {
    const ev = create(EventSchema, { kind: 99 as EventKind, body: { case: "tool", value: { id: "c", mediation: 7 as Mediation } } });
    expect(json(normalizeEvent(ev))).toEqual({ tool: { id: "c" } });
    const lc = create(EventSchema, { kind: 9, body: { case: "lifecycle", value: { kind: 42 as Lifecycle_Kind } } });
    expect(json(normalizeEvent(lc))).toEqual({ kind: "EVENT_LIFECYCLE", lifecycle: {} });
    const tr = create(EventSchema, { kind: 5, body: { case: "result", value: { id: "c", code: 9 as ToolResult_Code } } });
    expect(json(normalizeEvent(tr))).toEqual({ kind: "EVENT_TOOL_RESULT", result: { id: "c", code: 9 } });
  });

  it("normalize: keeps present-but-empty nested messages (HarnessEnd.error)", () => {
    const ev = create(EventSchema, { kind: 10, body: { case: "end", value: { state: "FAILED", error: {} } } });
    expect(json(normalizeEvent(ev))).toEqual({ kind: "EVENT_END", end: { state: "FAILED", error: {} } });
  });

  it("normalize: never modifies its input", () => {
    const ev = create(EventSchema, { kind: 3, actor: {} });
    normalizeEvent(ev);
    expect(ev.actor).toBeDefined();
  });
});
