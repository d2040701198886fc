/**
 * The binary protobuf of a message, written by an encoder compiled once per message type: the
 * same bytes as protobuf-es's `toBinary(schema, message)`, without its reflection layer (a
 * wrapper object per message, a presence check and a type switch per field per call).
 *
 * It follows toBinary's rules exactly: fields in field-number order, proto3 implicit presence
 * (a zero scalar, an empty list or map is not written; +0 is zero, -0 is not), explicit presence
 * for oneof members, messages and `optional` fields, packed repeated scalars where the field is
 * packed, map entries as key 1 / value 2 in the object's key order, unknown fields last, a
 * google.protobuf.Struct held as a plain JSON object (and a wrapper type held unwrapped) the way
 * protobuf-es represents them in a field. Values are written by protobuf-es's own BinaryWriter,
 * so an out-of-range number throws as it does there.
 *
 * The hot path of every append (proto/canon.ts eventToStoredBytes). Property-tested against
 * toBinary, which stays the reference: test/node/proto/binary-writer.test.ts.
 */
import { type DescField, type DescMessage, type MessageShape, protoInt64, ScalarType } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { heldAsJson, WRAPPER_TYPES } from "./local-forms.js";
import type { WellFormed } from "./jcs-writer.js";

/** A protobuf writer into one growing buffer (the subset of BinaryWriter the encoders use). */
class Writer {
  // Encoding is synchronous and never re-entered, so every call writes into the same scratch
  // buffer (allocating a typed array costs more than encoding a small message).
  buf = scratch;
  pos = 0;
  /** Whether any message written carried unknown fields. */
  unknown = false;
  /**
   * Whether any string written held a lone surrogate, which UTF-8 cannot: it was written as U+FFFD
   * (TextEncoder's replacement), so the bytes hold a different string than the message.
   */
  illFormed = false;
  private readonly _forks: number[] = [];

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    if (size <= MAX_SCRATCH) scratch = next;
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }

  tag(no: number, wire: WireType): this {
    return this.varint32(((no << 3) | wire) >>> 0);
  }

  /** An unsigned 32-bit varint, unchecked. */
  varint32(v: number): this {
    this.ensure(5);
    const b = this.buf;
    while (v > 0x7f) {
      b[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[this.pos++] = v;
    return this;
  }

  /** A 64-bit varint from its two's-complement halves. */
  varint64(lo: number, hi: number): this {
    this.ensure(10);
    const b = this.buf;
    lo >>>= 0;
    hi >>>= 0;
    while (hi !== 0 || lo > 0x7f) {
      b[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    b[this.pos++] = lo;
    return this;
  }

  int32(v: unknown): this {
    const n = checkedInt(v, "int32", -0x80000000, 0x7fffffff);
    // A negative int32 is sign-extended to ten bytes.
    return n >= 0 ? this.varint32(n) : this.varint64(n, -1);
  }

  uint32(v: unknown): this {
    return this.varint32(checkedInt(v, "uint32", 0, 0xffffffff));
  }

  int64(v: unknown): this {
    const { lo, hi } = protoInt64.enc(v as bigint);
    return this.varint64(lo, hi);
  }

  bool(v: unknown): this {
    this.ensure(1);
    this.buf[this.pos++] = v ? 1 : 0;
    return this;
  }

  string(s: string): this {
    // UTF-8 takes at most 3 bytes per UTF-16 unit; reserve the length's largest varint first.
    const max = s.length * 3;
    const room = max < 0x80 ? 1 : max < 0x4000 ? 2 : 5;
    this.ensure(room + max);
    const at = this.pos;
    const n = TEXT.encodeInto(s, this.buf.subarray(at + room)).written;
    // As many bytes as units is ASCII, which holds no surrogate; only other text is checked.
    if (n !== s.length && !(s as WellFormed).isWellFormed()) this.illFormed = true;
    const k = varintSize(n);
    if (k < room) this.buf.copyWithin(at + k, at + room, at + room + n);
    this.pos = at;
    this.varint32(n);
    this.pos = at + k + n;
    return this;
  }

  bytes(v: Uint8Array): this {
    this.varint32(v.length);
    return this.raw(v);
  }

  raw(v: Uint8Array): this {
    this.ensure(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
    return this;
  }

  /** Starts a length-delimited body; join() writes its length in front of it. */
  fork(): this {
    this.ensure(1);
    this._forks.push(this.pos++);
    return this;
  }

  join(): this {
    const at = this._forks.pop()!;
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return this;
    }
    const k = varintSize(len);
    this.ensure(k - 1);
    this.buf.copyWithin(at + k, at + 1, this.pos);
    const end = this.pos + k - 1;
    this.pos = at;
    this.varint32(len);
    this.pos = end;
    return this;
  }

  /** A value of a rarely used scalar type, written (and checked) by protobuf-es's own writer. */
  viaBinaryWriter(write: (w: BinaryWriter) => void): this {
    const w = new BinaryWriter();
    write(w);
    return this.raw(w.finish());
  }
}

const TEXT = new TextEncoder();
const MAX_SCRATCH = 1 << 20;
let scratch = new Uint8Array(4096);

function varintSize(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

/** An integer field's value as protobuf-es's writer accepts it (a number, or a numeric string). */
function checkedInt(v: unknown, type: string, min: number, max: number): number {
  let n: number;
  if (typeof v === "number") n = v;
  else if (typeof v === "string") n = Number(v);
  else throw new Error(`invalid ${type}: ${typeof v}`);
  if (!Number.isInteger(n) || n > max || n < min) throw new Error(`invalid ${type}: ${String(v)}`);
  return n;
}

type Msg = Record<string, unknown>;
type Write = (w: Writer, msg: Msg) => void;
type WriteValue = (w: Writer, v: unknown) => void;

const compiled = new WeakMap<DescMessage, Write>();

/** The binary encoding of `message`, byte for byte what `toBinary(schema, message)` returns. */
export function encodeBinary<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): Uint8Array {
  const w = new Writer();
  encoderOf(schema)(w, message as unknown as Msg);
  return w.finish();
}

/**
 * encodeBinary, also saying whether the message (at any depth) carried unknown fields, and
 * whether a string held a lone surrogate (its bytes then hold U+FFFD in its place).
 */
export function encodeBinaryNoting<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): { bytes: Uint8Array; unknown: boolean; illFormed: boolean } {
  const w = new Writer();
  encoderOf(schema)(w, message as unknown as Msg);
  return { bytes: w.finish(), unknown: w.unknown, illFormed: w.illFormed };
}

function encoderOf(desc: DescMessage): Write {
  let enc = compiled.get(desc);
  if (!enc) {
    // Set before compiling the fields, so a recursive type (Struct → Value → Struct) finds itself.
    let fields: Write[] = [];
    enc = (w, msg) => {
      for (let i = 0; i < fields.length; i++) fields[i]!(w, msg);
      const unknown = msg.$unknown as { no: number; wireType: WireType; data: Uint8Array }[] | undefined;
      if (unknown && unknown.length > 0) {
        w.unknown = true;
        for (const u of unknown) w.tag(u.no, u.wireType).raw(u.data);
      }
    };
    compiled.set(desc, enc);
    fields = [...desc.fields].sort((a, b) => a.number - b.number).map(fieldWriter);
  }
  return enc;
}

function fieldWriter(f: DescField): Write {
  const name = f.localName;
  if (f.oneof) {
    const group = f.oneof.localName;
    const value = singularWriter(f);
    return (w, msg) => {
      const sel = msg[group] as { case?: string; value?: unknown };
      if (sel.case === name) value(w, sel.value);
    };
  }
  switch (f.fieldKind) {
    case "scalar":
    case "enum": {
      const value = singularWriter(f);
      if (f.presence !== IMPLICIT) {
        return (w, msg) => {
          const v = msg[name];
          if (v !== undefined && Object.hasOwn(msg, name)) value(w, v);
        };
      }
      const zero = f.fieldKind === "enum" ? isEnumZero(f.enum.values[0]!.number) : zeroCheck(f.scalar);
      return (w, msg) => {
        const v = msg[name];
        if (!zero(v)) value(w, v);
      };
    }
    case "message": {
      const value = singularWriter(f);
      return (w, msg) => {
        const v = msg[name];
        if (v !== undefined && Object.hasOwn(msg, name)) value(w, v);
      };
    }
    case "list":
      return listWriter(f, name);
    case "map":
      return mapWriter(f, name);
  }
}

const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT

/** Writes tag and value of a singular field (or a oneof member) that is set. */
function singularWriter(f: DescField): WriteValue {
  const no = f.number;
  if (f.fieldKind === "message") {
    const local = localMessage(f.message, f.parent, f.oneof === undefined);
    if (f.delimitedEncoding) {
      return (w, v) => {
        w.tag(no, WireType.StartGroup);
        local(w, v);
        w.tag(no, WireType.EndGroup);
      };
    }
    return (w, v) => {
      w.tag(no, WireType.LengthDelimited).fork();
      local(w, v);
      w.join();
    };
  }
  const type = f.fieldKind === "enum" ? ScalarType.INT32 : (f.scalar ?? ScalarType.INT32);
  const wire = wireTypeOf(type);
  const value = scalarWriter(type, f);
  return (w, v) => value(w.tag(no, wire), v);
}

/**
 * Writes the fields of a message value as protobuf-es holds it in a field of `parent`: a Struct as
 * a JSON object (except inside a Value), a wrapper type as its bare value (singular fields only).
 */
function localMessage(desc: DescMessage, parent: DescMessage, singular: boolean): WriteValue {
  if (heldAsJson(desc, parent)) return (w, v) => writeJsonObject(w, v);
  if (singular && WRAPPER_TYPES.has(desc.typeName)) {
    const inner = desc.fields[0]!;
    const type = inner.scalar ?? ScalarType.INT32;
    const value = scalarWriter(type, inner);
    const zero = zeroCheck(type);
    const wire = wireTypeOf(type);
    return (w, v) => {
      if (!zero(v)) value(w.tag(1, wire), v);
    };
  }
  const enc = encoderOf(desc);
  return (w, v) => enc(w, v as Msg);
}

function listWriter(f: DescField & { fieldKind: "list" }, name: string): Write {
  const no = f.number;
  if (f.listKind === "message") {
    const local = localMessage(f.message, f.parent, false);
    const delimited = f.delimitedEncoding;
    return (w, msg) => {
      const list = msg[name] as unknown[];
      for (let i = 0; i < list.length; i++) {
        if (delimited) {
          w.tag(no, WireType.StartGroup);
          local(w, list[i]);
          w.tag(no, WireType.EndGroup);
        } else {
          w.tag(no, WireType.LengthDelimited).fork();
          local(w, list[i]);
          w.join();
        }
      }
    };
  }
  const type = f.listKind === "enum" ? ScalarType.INT32 : f.scalar;
  const value = scalarWriter(type, f);
  if (f.packed) {
    return (w, msg) => {
      const list = msg[name] as unknown[];
      if (list.length === 0) return;
      w.tag(no, WireType.LengthDelimited).fork();
      for (let i = 0; i < list.length; i++) value(w, list[i]);
      w.join();
    };
  }
  const wire = wireTypeOf(type);
  return (w, msg) => {
    const list = msg[name] as unknown[];
    for (let i = 0; i < list.length; i++) value(w.tag(no, wire), list[i]);
  };
}

function mapWriter(f: DescField & { fieldKind: "map" }, name: string): Write {
  const no = f.number;
  const keyType = f.mapKey;
  const keyWire = wireTypeOf(keyType);
  const key = scalarWriter(keyType, f);
  const toKey = mapKeyOf(keyType);
  let value: WriteValue;
  if (f.mapKind === "message") {
    const local = localMessage(f.message, f.parent, false);
    value = (w, v) => {
      w.tag(2, WireType.LengthDelimited).fork();
      local(w, v);
      w.join();
    };
  } else {
    const type = f.mapKind === "enum" ? ScalarType.INT32 : f.scalar;
    const wire = wireTypeOf(type);
    const scalar = scalarWriter(type, f);
    value = (w, v) => scalar(w.tag(2, wire), v);
  }
  return (w, msg) => {
    const map = msg[name] as Record<string, unknown>;
    for (const k of Object.keys(map)) {
      w.tag(no, WireType.LengthDelimited).fork();
      key(w.tag(1, keyWire), toKey(k));
      value(w, map[k]);
      w.join();
    }
  };
}

/** A map key from its object-key string, as protobuf-es's reflection hands it to the writer. */
function mapKeyOf(type: ScalarType): (k: string) => unknown {
  switch (type) {
    case ScalarType.STRING:
      return (k) => k;
    case ScalarType.BOOL:
      return (k) => (k === "true" ? true : k === "false" ? false : k);
    case ScalarType.INT32:
    case ScalarType.FIXED32:
    case ScalarType.UINT32:
    case ScalarType.SFIXED32:
    case ScalarType.SINT32:
      return (k) => {
        // biome-ignore lint/correctness/useParseIntRadix: protobuf-es parses map keys without one.
        const n = Number.parseInt(k);
        return Number.isFinite(n) ? n : k;
      };
    default:
      return (k) => k;
  }
}

// google.protobuf.Struct / Value / ListValue from a JSON value, as protobuf-es converts them.

function writeJsonObject(w: Writer, obj: unknown): void {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) return;
  const o = obj as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    w.tag(1, WireType.LengthDelimited).fork();
    w.tag(1, WireType.LengthDelimited).string(k);
    w.tag(2, WireType.LengthDelimited).fork();
    writeJsonValue(w, o[k]);
    w.join();
    w.join();
  }
}

function writeJsonValue(w: Writer, v: unknown): void {
  switch (typeof v) {
    case "number":
      w.tag(2, WireType.Bit64).viaBinaryWriter((b) => b.double(v));
      return;
    case "string":
      w.tag(3, WireType.LengthDelimited).string(v);
      return;
    case "boolean":
      w.tag(4, WireType.Varint).bool(v);
      return;
    case "object":
      if (v === null) {
        w.tag(1, WireType.Varint).int32(0);
      } else if (Array.isArray(v)) {
        w.tag(6, WireType.LengthDelimited).fork();
        for (const e of v) {
          w.tag(1, WireType.LengthDelimited).fork();
          writeJsonValue(w, e);
          w.join();
        }
        w.join();
      } else {
        w.tag(5, WireType.LengthDelimited).fork();
        writeJsonObject(w, v);
        w.join();
      }
      return;
    default:
    // Anything else (undefined) is a Value with no kind set: nothing to write.
  }
}

function isEnumZero(zero: number): (v: unknown) => boolean {
  return (v) => v === zero;
}

/** proto3 implicit presence: whether a scalar holds its zero value (and so is not written). */
function zeroCheck(type: ScalarType): (v: unknown) => boolean {
  switch (type) {
    case ScalarType.BOOL:
      return (v) => v === false;
    case ScalarType.STRING:
      return (v) => v === "";
    case ScalarType.BYTES:
      return (v) => v instanceof Uint8Array && v.byteLength === 0;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (v) => Object.is(v, 0);
    default:
      // Loose, as protobuf-es compares: 0, 0n and "0" are all zero.
      // biome-ignore lint/suspicious/noDoubleEquals: 0n == 0 and "0" == 0, as protobuf-es compares.
      return (v) => v == 0;
  }
}

/** The wire type a scalar of `type` is written with (and, unpacked, read with: jcs-binary.ts). */
export function wireTypeOf(type: ScalarType): WireType {
  switch (type) {
    case ScalarType.BYTES:
    case ScalarType.STRING:
      return WireType.LengthDelimited;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return WireType.Bit64;
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
    case ScalarType.FLOAT:
      return WireType.Bit32;
    default:
      return WireType.Varint;
  }
}

/** Writes one scalar value (no tag); a value the type cannot hold throws, naming the field. */
function scalarWriter(type: ScalarType, f: DescField): WriteValue {
  const write = rawScalar(type);
  return (w, v) => {
    try {
      write(w, v);
    } catch (e) {
      if (e instanceof Error) throw new Error(`cannot encode field ${f.parent.typeName}.${f.name} to binary: ${e.message}`);
      throw e;
    }
  };
}

function rawScalar(type: ScalarType): WriteValue {
  switch (type) {
    case ScalarType.STRING:
      return (w, v) => w.string(v as string);
    case ScalarType.BOOL:
      return (w, v) => w.bool(v);
    case ScalarType.INT32:
      return (w, v) => w.int32(v);
    case ScalarType.UINT32:
      return (w, v) => w.uint32(v);
    case ScalarType.INT64:
      return (w, v) => w.int64(v);
    case ScalarType.BYTES:
      return (w, v) => w.bytes(v as Uint8Array);
    case ScalarType.DOUBLE:
      return (w, v) => w.viaBinaryWriter((b) => b.double(v as number));
    case ScalarType.FLOAT:
      return (w, v) => w.viaBinaryWriter((b) => b.float(v as number));
    case ScalarType.UINT64:
      return (w, v) => w.viaBinaryWriter((b) => b.uint64(v as bigint));
    case ScalarType.FIXED64:
      return (w, v) => w.viaBinaryWriter((b) => b.fixed64(v as bigint));
    case ScalarType.FIXED32:
      return (w, v) => w.viaBinaryWriter((b) => b.fixed32(v as number));
    case ScalarType.SFIXED32:
      return (w, v) => w.viaBinaryWriter((b) => b.sfixed32(v as number));
    case ScalarType.SFIXED64:
      return (w, v) => w.viaBinaryWriter((b) => b.sfixed64(v as bigint));
    case ScalarType.SINT64:
      return (w, v) => w.viaBinaryWriter((b) => b.sint64(v as bigint));
    case ScalarType.SINT32:
      return (w, v) => w.viaBinaryWriter((b) => b.sint32(v as number));
  }
}
