/**
 * The schema-driven JCS writer (proto/jcs-writer.ts) against the reference it replaces on the hot
 * path, toJson + canonicalize: byte-identical text (or both refusing) on thousands of randomly
 * generated Events and ModelCalls covering every field, every oneof case, Struct and Timestamp
 * values, unknown enum numbers, awkward strings and numbers (issue 12: "canonicalize remains the
 * reference the fast path is tested against").
 */
import { create, type DescMessage, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { canonicalRecordString, canonicalRecordStringReference, jcs } from "../../../proto/canonical-json.js";
import { EventSchema, ModelCallSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { canonicalJsonOf } from "../../../proto/jcs-writer.js";
import { normalizeEvent } from "../../../proto/normalize.js";
import { message, orRefused, rng } from "../support/random-messages.js";

/** Both ways of writing it: the same text, or both refuse. */
function both(desc: DescMessage, msg: object): { fast: string; ref: string } {
  return {
    fast: orRefused(() => canonicalJsonOf(desc, msg)),
    ref: orRefused(() => jcs(toJson(desc, msg as never, { useProtoFieldName: true }))),
  };
}

describe("the JCS writer against toJson + canonicalize", () => {
  it("canonicalJsonOf: 5000 random Events give the reference's text byte for byte (or both refuse)", () => {
    const r = rng(20261201);
    let refused = 0;
    for (let i = 0; i < 5000; i++) {
      const ev = message(r, EventSchema, 0);
      const { fast, ref } = both(EventSchema, ev);
      if (ref === "<refused>") refused++;
      expect(fast, `case ${i}`).toBe(ref);
    }
    // The generator must reach the refusals (lone surrogates, NaN in JSON) too, but not only them.
    expect(refused).toBeGreaterThan(50);
    expect(refused).toBeLessThan(4500);
  });

  it("canonicalJsonOf: 2000 random ModelCalls (the input hash's text) match the reference", () => {
    const r = rng(7);
    for (let i = 0; i < 2000; i++) {
      const call = message(r, ModelCallSchema, 0);
      const { fast, ref } = both(ModelCallSchema, { ...call, id: "", inputHash: "" });
      expect(fast, `case ${i}`).toBe(ref);
    }
  });

  it("canonicalRecordString: normalized random Events hash the same text as the reference record form", () => {
    const r = rng(42);
    let compared = 0;
    for (let i = 0; i < 2000; i++) {
      let ev;
      try {
        ev = normalizeEvent(create(EventSchema, message(r, EventSchema, 0) as never));
      } catch {
        continue;
      }
      const prev = r.chance(0.5) ? "" : "ab".repeat(32);
      const seq = BigInt(1 + r.int(100000));
      const fast = orRefused(() => canonicalRecordString(ev, prev, seq));
      const ref = orRefused(() => canonicalRecordStringReference(ev, prev, seq));
      expect(fast, `case ${i}`).toBe(ref);
      compared++;
    }
    expect(compared).toBeGreaterThan(1500);
  });
});
