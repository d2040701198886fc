/**
 * The compiled binary decoder (proto/binary-reader.ts) against protobuf-es's fromBinary, the
 * reference: the same message (or both refusing) for thousands of random messages of every type
 * this host decodes, for two encodings concatenated (protobuf's merge: last scalar wins, messages
 * merge, lists append, map keys overwrite), and for mutated and truncated bytes.
 */
import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { decodeBinary } from "../../../proto/binary-reader.js";
import { HostMessageSchema, HarnessMessageSchema } from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { TailResponseSchema } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { EventSchema, LogRecordSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ControllerFrameSchema } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ExecRequestSchema, ExecUpdateSchema, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { encodeRandom as encode, mutate, orRefused, rng } from "../support/random-messages.js";

/** A deterministic dump: sorted keys, bytes as hex, bigints as text, `undefined` kept. */
function dump(v: unknown): string {
  if (v instanceof Uint8Array) return `bytes:${Buffer.from(v).toString("hex")}`;
  if (typeof v === "bigint") return `${v}n`;
  if (v === undefined) return "undefined";
  if (typeof v === "number" && Object.is(v, -0)) return "-0";
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  if (Array.isArray(v)) return `[${v.map(dump).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${dump(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

function both(desc: DescMessage, bytes: Uint8Array): { fast: string; ref: string } {
  return { fast: orRefused(() => decodeBinary(desc, bytes), dump), ref: orRefused(() => fromBinary(desc, bytes), dump) };
}

const SCHEMAS: [string, DescMessage][] = [
  ["Event", EventSchema],
  ["LogRecord", LogRecordSchema],
  ["Session", SessionSchema],
  ["ExecRequest", ExecRequestSchema],
  ["ExecUpdate", ExecUpdateSchema],
  ["TailResponse", TailResponseSchema],
  ["HostMessage", HostMessageSchema],
  ["HarnessMessage", HarnessMessageSchema],
  ["ControllerFrame", ControllerFrameSchema],
];

describe("the compiled binary decoder against fromBinary", () => {
  it.each(SCHEMAS)("decodeBinary: 1500 random %s messages decode to fromBinary's message", (_n, desc) => {
    const r = rng(desc.typeName.length * 7 + 1);
    let compared = 0;
    for (let i = 0; i < 1500; i++) {
      const b = encode(desc, r);
      if (!b) continue;
      const { fast, ref } = both(desc, b);
      expect(fast, `case ${i}`).toBe(ref);
      compared++;
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it.each(SCHEMAS)("decodeBinary: two %s encodings concatenated merge as fromBinary merges them", (_n, desc) => {
    const r = rng(desc.typeName.length * 13 + 5);
    for (let i = 0; i < 800; i++) {
      const a = encode(desc, r);
      const b = encode(desc, r);
      if (!a || !b) continue;
      const joined = Uint8Array.from([...a, ...b]);
      const { fast, ref } = both(desc, joined);
      expect(fast, `case ${i}`).toBe(ref);
    }
  });

  it.each(SCHEMAS)("decodeBinary: mutated and truncated %s bytes give fromBinary's answer, or both refuse", (_n, desc) => {
    const r = rng(desc.typeName.length * 31 + 3);
    let refused = 0;
    for (let i = 0; i < 1500; i++) {
      const b = encode(desc, r);
      if (!b) continue;
      const { fast, ref } = both(desc, mutate(r, b));
      expect(fast, `case ${i}`).toBe(ref);
      if (ref === "<refused>") refused++;
    }
    expect(refused).toBeGreaterThan(10);
  });

  it("decodeBinary: nesting past the 100-level limit is refused as fromBinary refuses it", () => {
    // A Struct inside a Value inside a Struct …, 120 levels.
    let inner = Uint8Array.of();
    for (let i = 0; i < 120; i++) {
      const value = Uint8Array.from([0x2a, ...varint(inner.length), ...inner]); // Value.struct_value = 5
      const entry = Uint8Array.from([0x0a, 1, 0x6b, 0x12, ...varint(value.length), ...value]); // key "k", value
      inner = Uint8Array.from([0x0a, ...varint(entry.length), ...entry]); // Struct.fields = 1
    }
    const { fast, ref } = both(StructSchema, inner);
    expect(ref).toBe("<refused>");
    expect(fast).toBe(ref);
    // 30 levels (60 messages deep) decode, the same either way.
    let ok = Uint8Array.of();
    for (let i = 0; i < 30; i++) {
      const value = Uint8Array.from([0x2a, ...varint(ok.length), ...ok]);
      const entry = Uint8Array.from([0x0a, 1, 0x6b, 0x12, ...varint(value.length), ...value]);
      ok = Uint8Array.from([0x0a, ...varint(entry.length), ...entry]);
    }
    const shallow = both(StructSchema, ok);
    expect(shallow.ref).not.toBe("<refused>");
    expect(shallow.fast).toBe(shallow.ref);
  });
});

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}
