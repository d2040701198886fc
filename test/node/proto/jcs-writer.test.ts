/**
 * The schema-driven JCS writer (proto/jcs-writer.ts) against the reference it replaces on the hot
 * path, toJson + canonicalize: byte-identical text (or both refusing) on thousands of randomly
 * generated Events and ModelCalls covering every field, every oneof case, Struct and Timestamp
 * values, unknown enum numbers, awkward strings and numbers (issue 12: "canonicalize remains the
 * reference the fast path is tested against").
 */
import { create, type DescField, type DescMessage, ScalarType, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { canonicalRecordString, canonicalRecordStringReference, jcs } from "../../../proto/canonical-json.js";
import { EventSchema, ModelCallSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { canonicalJsonOf } from "../../../proto/jcs-writer.js";
import { normalizeEvent } from "../../../proto/normalize.js";

/** A small seeded PRNG (mulberry32), so a failure reproduces. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}
type Rng = ReturnType<typeof rng>;

const STRINGS = [
  "",
  "a",
  "é",
  "\u2028",
  "\u2029",
  "\u0000\u001f",
  '"\\/',
  "😀",
  "\ud83d",
  "\udc00x",
  "__proto__",
  "constructor",
  "1",
  "10",
  "Zz",
  "ｆｕｌｌ",
  "\t\n\r",
];

function str(r: Rng): string {
  let s = "";
  for (let i = r.int(4); i >= 0; i--) s += r.pick(STRINGS);
  return s;
}

function json(r: Rng, depth: number): unknown {
  const k = r.int(depth > 3 ? 4 : 7);
  switch (k) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return r.pick([
        0,
        -0,
        1,
        -1.5,
        1e21,
        1e-7,
        0.1,
        2 ** 53,
        Number.MAX_VALUE,
        Number.MIN_VALUE,
        ...(r.chance(0.03) ? [Number.NaN, Number.POSITIVE_INFINITY] : []),
      ]);
    case 3:
      return str(r);
    case 4:
      return Array.from({ length: r.int(4) }, () => json(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(5); i > 0; i--) o[str(r)] = json(r, depth + 1);
      return o;
    }
  }
}

function scalar(r: Rng, t: ScalarType): unknown {
  switch (t) {
    case ScalarType.STRING:
      return str(r);
    case ScalarType.BOOL:
      return r.chance(0.5);
    case ScalarType.BYTES:
      return Uint8Array.from({ length: r.int(6) }, () => r.int(256));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return r.pick([0n, 1n, -1n, 2n ** 63n - 1n, -(2n ** 63n), 12345678901234n]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return r.pick([0n, 1n, 2n ** 64n - 1n]);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return r.pick([0, -0, 1.5, -2.25, 1e300, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0.1]);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return r.pick([0, 1, 4294967295]);
    default:
      return r.pick([0, 1, -1, 2147483647, -2147483648]);
  }
}

/** A random message of `desc`, as protobuf-es holds it (Struct fields as JSON objects). */
function message(r: Rng, desc: DescMessage, depth: number): Record<string, unknown> {
  if (desc.typeName === "google.protobuf.Timestamp") {
    return create(desc, {
      seconds: r.pick([0n, 1n, 1700000000n, -62135596800n, 253402300799n, ...(r.chance(0.05) ? [-62135596801n] : [])]),
      nanos: r.pick([0, 1, 1000, 1000000, 999999999]),
    }) as never;
  }
  if (desc.typeName === "google.protobuf.Struct") return create(desc, { fields: {} }) as never;
  const init: Record<string, unknown> = {};
  const oneofs = new Map<string, DescField[]>();
  for (const f of desc.fields) {
    if (f.oneof) {
      oneofs.set(f.oneof.localName, [...(oneofs.get(f.oneof.localName) ?? []), f]);
      continue;
    }
    if (!r.chance(0.6)) continue;
    init[f.localName] = fieldValue(r, f, depth);
  }
  for (const [name, fields] of oneofs) {
    if (!r.chance(0.8)) continue;
    const f = r.pick(fields);
    init[name] = { case: f.localName, value: fieldValue(r, f, depth) };
  }
  return create(desc, init as never) as never;
}

function single(r: Rng, f: DescField, depth: number): unknown {
  if (f.enum) {
    const values = f.enum!.values.map((v) => v.number);
    return r.chance(0.1) ? 77 : r.pick(values);
  }
  const msg = f.message;
  if (msg) {
    if (msg.typeName === "google.protobuf.Struct") return r.chance(0.8) ? objectOf(r) : {};
    if (depth > 4) return create(msg);
    return message(r, msg, depth + 1);
  }
  return scalar(r, f.scalar!);
}

function objectOf(r: Rng): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = r.int(4); i > 0; i--) o[str(r)] = json(r, 1);
  return o;
}

function fieldValue(r: Rng, f: DescField, depth: number): unknown {
  if (f.fieldKind === "list") return Array.from({ length: r.int(3) }, () => single(r, f, depth));
  if (f.fieldKind === "map") {
    const m: Record<string, unknown> = {};
    for (let i = r.int(3); i > 0; i--) m[str(r)] = single(r, f, depth);
    return m;
  }
  return single(r, f, depth);
}

/** Both ways of writing it: the same text, or both refuse. */
function both(desc: DescMessage, msg: object): { fast: string; ref: string } {
  const attempt = (f: () => string) => {
    try {
      return f();
    } catch {
      return "<refused>";
    }
  };
  return {
    fast: attempt(() => canonicalJsonOf(desc, msg)),
    ref: attempt(() => jcs(toJson(desc, msg as never, { useProtoFieldName: true }))),
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
      const fast = (() => {
        try {
          return canonicalRecordString(ev, prev, seq);
        } catch {
          return "<refused>";
        }
      })();
      const ref = (() => {
        try {
          return canonicalRecordStringReference(ev, prev, seq);
        } catch {
          return "<refused>";
        }
      })();
      expect(fast, `case ${i}`).toBe(ref);
      compared++;
    }
    expect(compared).toBeGreaterThan(1500);
  });
});
