/**
 * Byte-level hostility for the fuzz suite: a small protobuf wire writer (so malformed encodings can
 * be built that no encoder would produce), the byte mutations applied to valid encodings (bit flips,
 * truncation, 10+ byte varints, lengths past the end, duplicated fields, wrong wire types, invalid
 * UTF-8, strings past the storage limits), google.protobuf.Struct/Value nested hundreds of levels deep, and the Connect streaming
 * envelope with bad lengths and flags. Used by cases.ts and tunnel-fuzz.ts.
 */
import type { Rng } from "./rng.js";

export function concat(...parts: (Uint8Array | number[])[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

export function tag(field: number, wireType: number): number[] {
  return varint((BigInt(field) << 3n) | BigInt(wireType));
}

/** A length-delimited field. */
export function lenField(field: number, payload: Uint8Array | number[]): Uint8Array {
  return concat(tag(field, 2), varint(payload.length), payload);
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Byte sequences no UTF-8 decoder should accept: stray continuation, overlong, surrogate, 0xFF. */
export const INVALID_UTF8: readonly number[][] = [
  [0xc3, 0x28],
  [0xff],
  [0xfe, 0xfe],
  [0xed, 0xa0, 0x80],
  [0xc0, 0xaf],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0x80, 0x80],
  [0xe2, 0x82],
];

/** A varint of 10 or more bytes: past what 64 bits can hold, or a run of 0xFF with no end. */
export function hugeVarint(rng: Rng): number[] {
  const run = Array<number>(rng.range(10, 40)).fill(0xff);
  return rng.chance(0.5) ? [...run, 0x01] : run;
}

/** google.protobuf.Value nested `levels` deep through Struct (or ListValue) fields, innermost null. */
export function deepValue(levels: number, list: boolean): Uint8Array {
  // Built inside out with one preallocated buffer per level would be faster; at the depths used
  // here (at most a few thousand) repeated concat is fast enough and easy to read.
  let value: Uint8Array = new Uint8Array([...tag(1, 0), 0]); // Value{null_value: NULL_VALUE}
  for (let i = 0; i < levels; i++) {
    const inner = list
      ? lenField(1, value) // ListValue{values: [value]}
      : lenField(1, concat(lenField(1, utf8("a")), lenField(2, value))); // Struct{fields: {"a": value}}
    value = lenField(list ? 6 : 5, inner);
  }
  return value;
}

/** The Struct inside deepValue: what a DataPart.data or ToolCall.args field holds. */
export function deepStruct(levels: number): Uint8Array {
  return lenField(1, concat(lenField(1, utf8("a")), lenField(2, deepValue(levels, false))));
}

export type ByteMutation =
  | "flip"
  | "truncate"
  | "huge-varint"
  | "len-past-end"
  | "duplicate"
  | "wrong-wire-type"
  | "invalid-utf8"
  | "insert-random"
  | "splice-garbage"
  | "huge-string";

export const BYTE_MUTATIONS: readonly ByteMutation[] = [
  "flip",
  "truncate",
  "huge-varint",
  "len-past-end",
  "duplicate",
  "wrong-wire-type",
  "invalid-utf8",
  "insert-random",
  "splice-garbage",
  "huge-string",
];

/** Sizes that cross the limits: 32 KiB of session metadata, 1 MB per event, 2 MB per SQLite value. */
export const HUGE_SIZES = [40_000, 1_100_000, 3_000_000];

/** One mutation of an encoded message; `stringFields` are field numbers that hold strings. */
export function mutateBytes(rng: Rng, b: Uint8Array, m: ByteMutation, stringFields: readonly number[]): Uint8Array {
  const at = rng.int(b.length + 1);
  switch (m) {
    case "flip": {
      const out = b.length ? b.slice() : new Uint8Array([0]);
      for (let k = rng.range(1, 8); k > 0; k--) out[rng.int(out.length)]! ^= 1 << rng.int(8);
      return out;
    }
    case "truncate":
      return b.subarray(0, Math.max(0, b.length - rng.range(1, Math.max(1, b.length))));
    case "huge-varint":
      // Either a field whose varint value never ends, or a tag that is itself 10+ bytes.
      return rng.chance(0.5) ? concat(b.subarray(0, at), tag(rng.range(1, 20), 0), hugeVarint(rng), b.subarray(at)) : concat(b, hugeVarint(rng));
    case "len-past-end": {
      const claimed = rng.pick([b.length + 1, 0x7fffffff, 0xffffffff, 2 ** 40]);
      return concat(b, tag(rng.range(1, 20), 2), varint(claimed), rng.bytes(rng.int(8)));
    }
    case "duplicate":
      // Protobuf merges repeated occurrences; a second copy doubles repeated fields.
      return rng.chance(0.5) ? concat(b, b) : concat(b, b.subarray(rng.int(b.length + 1)));
    case "wrong-wire-type": {
      const field = rng.range(1, 8);
      const wt = rng.pick([0, 1, 2, 3, 4, 5, 6, 7]);
      const payload = wt === 0 ? varint(rng.int(1000)) : wt === 1 ? rng.bytes(8) : wt === 5 ? rng.bytes(4) : wt === 2 ? [...varint(3), 1, 2, 3] : [];
      return concat(b.subarray(0, at), tag(field, wt), payload, b.subarray(at));
    }
    case "invalid-utf8": {
      const field = stringFields.length ? rng.pick(stringFields) : 1;
      return concat(b, lenField(field, concat(utf8(rng.word(4)), rng.pick(INVALID_UTF8), utf8(rng.word(4)))));
    }
    case "insert-random":
      return concat(b.subarray(0, at), rng.bytes(rng.range(1, 16)), b.subarray(at));
    case "huge-string": {
      const field = stringFields.length ? rng.pick(stringFields) : 1;
      return concat(b, lenField(field, utf8("x".repeat(rng.pick(HUGE_SIZES)))));
    }
    case "splice-garbage": {
      const end = Math.min(b.length, at + rng.range(1, 32));
      return concat(b.subarray(0, at), rng.bytes(rng.range(0, 32)), b.subarray(end));
    }
  }
}

/** A Connect streaming envelope: flags byte, 4-byte big-endian length, payload. */
export function envelope(flags: number, payload: Uint8Array, claimedLength = payload.length): Uint8Array {
  const head = new Uint8Array(5);
  head[0] = flags;
  new DataView(head.buffer).setUint32(1, claimedLength >>> 0);
  return concat(head, payload);
}

/** A request body for a server-streaming RPC, enveloped correctly or in one of the broken ways. */
export function hostileEnvelope(rng: Rng, payload: Uint8Array): { body: Uint8Array; how: string } {
  const how = rng.weighted<string>([
    [12, "ok"],
    [1, "length-too-long"],
    [1, "length-too-short"],
    [1, "flags"],
    [1, "truncated-header"],
    [1, "two-messages"],
    [1, "end-stream-flag"],
    [1, "trailing-garbage"],
    [1, "no-envelope"],
  ]);
  switch (how) {
    case "length-too-long":
      return { how, body: envelope(0, payload, payload.length + rng.range(1, 1 << 20)) };
    case "length-too-short":
      return { how, body: envelope(0, payload, rng.int(Math.max(1, payload.length))) };
    case "flags":
      return { how, body: envelope(rng.pick([0x01, 0x03, 0x04, 0x40, 0x80, 0xff, rng.int(256)]), payload) };
    case "truncated-header":
      return { how, body: envelope(0, payload).subarray(0, rng.int(5)) };
    case "two-messages":
      return { how, body: concat(envelope(0, payload), envelope(0, payload)) };
    case "end-stream-flag":
      return { how, body: concat(envelope(0, payload), envelope(0x02, utf8("{}"))) };
    case "trailing-garbage":
      return { how, body: concat(envelope(0, payload), rng.bytes(rng.range(1, 4))) };
    case "no-envelope":
      return { how, body: payload };
    default:
      return { how, body: envelope(0, payload) };
  }
}
