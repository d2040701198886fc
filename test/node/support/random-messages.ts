/**
 * Seeded random protobuf messages as protobuf-es holds them (Struct fields as JSON objects), for
 * property tests of the fast writers against protobuf-es's reflective ones: every field, every
 * oneof case, Struct and Timestamp values, unknown enum numbers, awkward strings and numbers.
 */
import { create, type DescField, type DescMessage, ScalarType, toBinary } from "@bufbuild/protobuf";

/** A small seeded PRNG (mulberry32), so a failure reproduces. */
export function rng(seed: number) {
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
export type Rng = ReturnType<typeof rng>;

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
  // A byte order mark: a string may begin with one, and must keep it.
  "\ufeff",
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
export function message(r: Rng, desc: DescMessage, depth: number): Record<string, unknown> {
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

/** What `f` gives, as `show` writes it, or "<refused>" when it throws: how a fast path is compared with its reference. */
export function orRefused<T>(f: () => T, show: (v: T) => string = String): string {
  try {
    return show(f());
  } catch {
    return "<refused>";
  }
}

/** A random message of `desc` in its binary encoding; undefined when protobuf-es refuses to encode it. */
export function encodeRandom(desc: DescMessage, r: Rng): Uint8Array | undefined {
  try {
    return toBinary(desc, message(r, desc, 0) as never);
  } catch {
    return undefined;
  }
}

/** `b` truncated, with a byte changed, an unknown field appended, or cut short with two random bytes after. */
export function mutate(r: Rng, b: Uint8Array): Uint8Array {
  const c = Uint8Array.from(b);
  switch (r.int(4)) {
    case 0:
      return c.subarray(0, r.int(c.length + 1));
    case 1:
      if (c.length > 0) c[r.int(c.length)] = r.int(256);
      return c;
    case 2: {
      // An unknown field appended: varint, fixed64, length-delimited or fixed32.
      const tail = r.pick([
        Uint8Array.of(0xa8, 0x1f, 7),
        Uint8Array.of(0xa9, 0x1f, 1, 2, 3, 4, 5, 6, 7, 8),
        Uint8Array.of(0xaa, 0x1f, 2, 104, 105),
        Uint8Array.of(0xad, 0x1f, 1, 2, 3, 4),
      ]);
      return Uint8Array.from([...c, ...tail]);
    }
    default:
      return Uint8Array.from([...c.subarray(0, r.int(c.length + 1)), r.int(256), r.int(256)]);
  }
}
