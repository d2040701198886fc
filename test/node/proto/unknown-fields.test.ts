/**
 * The schema-driven unknown-field walk (proto/unknown-fields.ts) behind the journal's normal form:
 * unknown fields at any depth are found and dropped, and JSON data is never mistaken for them.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { normalizeEvent } from "../../../proto/normalize.js";
import { dropUnknownFields, hasUnknownFields } from "../../../proto/unknown-fields.js";
import { message, rng } from "../support/random-messages.js";

/** An Event whose tool call (nested two messages down) carries an unknown field 99. */
function withNestedUnknown() {
  const ev = create(EventSchema, { kind: 4, body: { case: "tool", value: { id: "c1", tool: "t", args: { q: 1 } } } });
  // Field 99 (length-delimited, "hi") inside the ToolCall: decoding keeps it in the call's $unknown.
  const call = ev.body.case === "tool" ? ev.body.value : undefined;
  (call as unknown as { $unknown: unknown }).$unknown = [{ no: 99, wireType: 2, data: Uint8Array.of(2, 104, 105) }];
  return fromBinary(EventSchema, toBinary(EventSchema, ev));
}

describe("unknown fields, walked with the schema", () => {
  it("hasUnknownFields / dropUnknownFields: an unknown field nested in a tool call is found and dropped", () => {
    const ev = withNestedUnknown();
    expect(hasUnknownFields(EventSchema, ev)).toBe(true);
    dropUnknownFields(EventSchema, ev);
    expect(hasUnknownFields(EventSchema, ev)).toBe(false);
    expect(toBinary(EventSchema, ev)).toEqual(
      toBinary(EventSchema, create(EventSchema, { kind: 4, body: { case: "tool", value: { id: "c1", tool: "t", args: { q: 1 } } } })),
    );
  });

  it("normalizeEvent: a JSON key named $unknown in tool arguments is data and is kept", () => {
    const ev = create(EventSchema, { kind: 4, body: { case: "tool", value: { id: "c1", tool: "t", args: { $unknown: [1, 2], nested: { $unknown: "x" } } } } });
    expect(hasUnknownFields(EventSchema, ev)).toBe(false);
    const n = normalizeEvent(ev);
    expect(n.body.case === "tool" && n.body.value.args).toEqual({ $unknown: [1, 2], nested: { $unknown: "x" } });
  });

  it("hasUnknownFields: random Events without unknown fields have none; with one injected anywhere, it is found", () => {
    const r = rng(31);
    let injected = 0;
    for (let i = 0; i < 1000; i++) {
      const ev = message(r, EventSchema, 0);
      expect(hasUnknownFields(EventSchema, ev), `case ${i}`).toBe(false);
      // Inject into a random nested message reached through message-typed fields only.
      const targets: Record<string, unknown>[] = [];
      const collect = (v: unknown) => {
        if (v === null || typeof v !== "object" || v instanceof Uint8Array) return;
        const o = v as Record<string, unknown>;
        if (typeof o.$typeName === "string" && o.$typeName !== "google.protobuf.Struct") targets.push(o);
        for (const k of Object.keys(o)) if (k !== "$typeName") collect(o[k]);
      };
      collect(ev);
      if (targets.length === 0) continue;
      const t = targets[r.int(targets.length)]!;
      t.$unknown = [{ no: 1000, wireType: 0, data: Uint8Array.of(1) }];
      expect(hasUnknownFields(EventSchema, ev), `case ${i} (${String(t.$typeName)})`).toBe(true);
      dropUnknownFields(EventSchema, ev);
      expect(hasUnknownFields(EventSchema, ev)).toBe(false);
      injected++;
    }
    expect(injected).toBeGreaterThan(500);
  });
});
