/**
 * RFC 8785 (JCS) text of a message's proto3-JSON written straight from its binary encoding: the
 * text `canonicalJsonOf(schema, decodeBinary(schema, bytes))` gives, without building the message.
 * A client that checks the records a host serves (`agentctl verify`) reads each one exactly once,
 * in a process too short-lived for the decoder and the writer both to warm up.
 *
 * It reads the plain form encoders write and answers undefined for the rest, so the caller decodes
 * and gets the decoder's rules and errors: a field seen twice (merge and last-wins), two members of
 * one oneof, a wire type that is not the field's, a google.protobuf.Struct, Value, ListValue, Any
 * or wrapper, a map of messages, a type outside proto3, nesting past the decoder's limit, and
 * anything the reader or the writer refuses (bad UTF-8, a truncated field, a lone surrogate).
 * Fields the schema does not know are skipped, as toJson skips what the decoder keeps of them.
 *
 * Property-tested against decodeBinary + canonicalJsonOf: test/node/proto/jcs-binary.test.ts.
 */
import type { DescField, DescMessage, ScalarType } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { scalarReader, scalarZero } from "./binary-reader.js";
import { wireTypeOf } from "./binary-writer.js";
import { isZero, writeDuration, writeEnum, writeScalar, writeString, writeTimestamp } from "./jcs-writer.js";

/** A BinaryReader whose bytes this module's own varint and tag readers can see. */
class Reader extends BinaryReader {
  get source(): Uint8Array {
    return this.buf;
  }
}

/** Thrown inside, caught at the top: these bytes are left to the decoder. */
class NeedsDecoder extends Error {}
const NEEDS_DECODER = new NeedsDecoder("left to the decoder");

/** A value's JSON text; "" for an implicit-presence zero, which proto3-JSON leaves out. */
type ReadText = (r: Reader, wire: WireType, depth: number) => string;

interface FieldPlan {
  /** The field's place in JCS key order. */
  slot: number;
  /** Bit of its oneof in a message's oneof mask; 0 outside a oneof. */
  oneofBit: number;
  kind: "single" | "list" | "map";
  read: ReadText;
  /** Maps only: one entry's key text (JSON-quoted later) and value text. */
  entry?: (r: Reader, depth: number) => [string, string];
}

interface Plan {
  ok: boolean;
  /** `"name":` per slot, in JCS order (proto names are ASCII: plain string order). */
  keys: string[];
  kinds: FieldPlan["kind"][];
  byNumber: Map<number, FieldPlan>;
  /** Timestamp and Duration: their own JSON forms. */
  special?: (r: Reader, end: number) => string;
}

const RECURSION_LIMIT = 100;
const EDITION_PROTO3 = 999;
const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT
const plans = new WeakMap<DescMessage, Plan>();

/** The JCS text of the message `bytes` encode; undefined when the decoder must read them. */
export function canonicalJsonOfBinary(schema: DescMessage, bytes: Uint8Array): string | undefined {
  try {
    const r = new Reader(bytes);
    return writeFields(planOf(schema), r, bytes.length, 1);
  } catch {
    return undefined;
  }
}

function writeFields(plan: Plan, r: Reader, end: number, depth: number): string {
  if (!plan.ok || depth > RECURSION_LIMIT) throw NEEDS_DECODER;
  if (plan.special) return plan.special(r, end);
  const texts: (string | undefined)[] = new Array(plan.keys.length);
  let maps: Map<string, string>[] | undefined;
  let oneofs = 0;
  while (r.pos < end) {
    const tag = tagOf(r);
    const no = tag >>> 3;
    const wire = (tag & 7) as WireType;
    const f = plan.byNumber.get(no);
    if (f === undefined) {
      r.skip(wire, no, RECURSION_LIMIT - depth);
      continue;
    }
    if (f.kind === "single") {
      if (texts[f.slot] !== undefined || (oneofs & f.oneofBit) !== 0) throw NEEDS_DECODER;
      oneofs |= f.oneofBit;
      texts[f.slot] = f.read(r, wire, depth);
    } else if (f.kind === "list") {
      const item = f.read(r, wire, depth);
      const had = texts[f.slot];
      texts[f.slot] = had === undefined || had === "" ? item : item === "" ? had : `${had},${item}`;
    } else {
      if (wire !== WireType.LengthDelimited) throw NEEDS_DECODER;
      maps ??= [];
      const m = (maps[f.slot] ??= new Map());
      const [k, v] = f.entry!(r, depth);
      m.set(k, v);
      texts[f.slot] = "";
    }
  }
  if (r.pos !== end) throw NEEDS_DECODER;
  let out = "{";
  for (let i = 0; i < texts.length; i++) {
    const kind = plan.kinds[i];
    const t = kind === "map" && maps?.[i] ? mapText(maps[i]!) : texts[i];
    if (t === undefined || t === "") continue;
    out += (out.length > 1 ? "," : "") + plan.keys[i] + (kind === "list" ? `[${t}]` : t);
  }
  return out + "}";
}

/** A map as toJson and the writer give it: keys sorted, "__proto__" not an own key of the object. */
function mapText(m: Map<string, string>): string {
  const keys = [...m.keys()].filter((k) => k !== "__proto__").sort();
  let out = "";
  for (let i = 0; i < keys.length; i++) out += (i > 0 ? "," : "") + writeString(keys[i]!) + ":" + m.get(keys[i]!)!;
  return out === "" ? "" : `{${out}}`;
}

function planOf(desc: DescMessage): Plan {
  let plan = plans.get(desc);
  if (plan) return plan;
  const sorted = [...desc.fields].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  plan = { ok: desc.file.edition === EDITION_PROTO3, keys: sorted.map((f) => `"${f.name}":`), kinds: [], byNumber: new Map() };
  // Set before the fields compile, so a recursive type finds itself.
  plans.set(desc, plan);
  if (desc.typeName === "google.protobuf.Timestamp") plan.special = (r, end) => writeTimestamp(secondsAndNanos(r, end));
  else if (desc.typeName === "google.protobuf.Duration") plan.special = (r, end) => writeDuration(secondsAndNanos(r, end));
  else if (desc.typeName.startsWith("google.protobuf.")) plan.ok = false;
  const oneofBits = new Map(desc.oneofs.map((o, i) => [o, 1 << i]));
  if (desc.oneofs.length > 30) plan.ok = false;
  sorted.forEach((f, slot) => {
    if (("delimitedEncoding" in f && f.delimitedEncoding) || (f.enum && !f.enum.open)) plan!.ok = false;
    const kind = f.fieldKind === "list" ? "list" : f.fieldKind === "map" ? "map" : "single";
    plan!.kinds.push(kind);
    plan!.byNumber.set(f.number, {
      slot,
      oneofBit: f.oneof ? oneofBits.get(f.oneof)! : 0,
      kind,
      read: readerOf(f),
      entry: f.fieldKind === "map" ? entryReader(f) : undefined,
    });
  });
  return plan;
}

/**
 * A field's tag as BinaryReader#tag reads it, without the pair it allocates; what that method
 * refuses is left to the decoder (which refuses it).
 */
function tagOf(r: Reader): number {
  const start = r.pos;
  const tag = r.uint32();
  const read = r.pos - start;
  if (read > 5 || (read === 5 && r.source[r.pos - 1]! > 0x0f) || tag >>> 3 === 0 || (tag & 7) > 5) throw NEEDS_DECODER;
  return tag;
}

/**
 * Seconds (int64, field 1) and nanos (int32, field 2), last value winning as in the decoder.
 * Seconds as a number: a Timestamp's range (years 1 to 9999) is well inside 2^53, and
 * writeTimestamp refuses anything outside it whichever way it is held.
 */
function secondsAndNanos(r: Reader, end: number): { seconds: number | bigint | string; nanos: number } {
  let seconds: number | bigint | string = 0;
  let nanos = 0;
  while (r.pos < end) {
    const tag = tagOf(r);
    const no = tag >>> 3;
    const wire = (tag & 7) as WireType;
    if ((no === 1 || no === 2) && wire !== WireType.Varint) throw NEEDS_DECODER;
    if (no === 1) seconds = smallInt64(r);
    else if (no === 2) nanos = r.int32();
    else r.skip(wire, no);
  }
  if (r.pos !== end) throw NEEDS_DECODER;
  return { seconds, nanos };
}

/** An int64 varint: a number when it has at most 7 bytes (under 2^49), else as BinaryReader reads it. */
function smallInt64(r: Reader): number | bigint | string {
  const buf = r.source;
  let n = 0;
  let scale = 1;
  for (let i = r.pos; i < r.pos + 7 && i < buf.length; i++) {
    const b = buf[i]!;
    n += (b & 0x7f) * scale;
    if (b < 0x80) {
      r.pos = i + 1;
      return n;
    }
    scale *= 128;
  }
  return r.int64();
}

function readerOf(f: DescField): ReadText {
  switch (f.fieldKind) {
    case "scalar":
      // Explicit presence (a oneof member, `optional`) writes a zero; implicit presence leaves it out.
      return single(wireTypeOf(f.scalar), scalarValue(f.scalar, f.utf8Validation, f.presence === IMPLICIT && !f.oneof));
    case "enum":
      return single(WireType.Varint, enumValue(f.enum, f.presence === IMPLICIT && !f.oneof));
    case "message":
      return messageText(f.message);
    case "list": {
      if (f.listKind === "message") return messageText(f.message);
      if (f.listKind === "enum") return packable(WireType.Varint, enumValue(f.enum, false));
      const one = scalarValue(f.scalar, f.utf8Validation, false);
      const wire = wireTypeOf(f.scalar);
      return wire === WireType.LengthDelimited ? single(wire, one) : packable(wire, one);
    }
    case "map":
      return () => "";
  }
}

/** One value's text, read where the reader stands. */
type ValueText = (r: Reader) => string;

function single(expected: WireType, value: ValueText): ReadText {
  return (r, wire) => {
    if (wire !== expected) throw NEEDS_DECODER;
    return value(r);
  };
}

/** A repeated number, read packed (one length-delimited run) or one element at a time, as the decoder reads both. */
function packable(expected: WireType, value: ValueText): ReadText {
  return (r, wire) => {
    if (wire === expected) return value(r);
    if (wire !== WireType.LengthDelimited) throw NEEDS_DECODER;
    const end = r.uint32() + r.pos;
    let out = "";
    while (r.pos < end) out += (out === "" ? "" : ",") + value(r);
    if (r.pos !== end) throw NEEDS_DECODER;
    return out;
  };
}

function scalarValue(type: ScalarType, utf8: boolean, omitZero: boolean): ValueText {
  const read = scalarReader(type, utf8);
  return (r) => {
    const v = read(r);
    return omitZero && isZero(type, v) ? "" : writeScalar(type, v);
  };
}

function enumValue(desc: DescField["enum"] & object, omitZero: boolean): ValueText {
  return (r) => {
    const v = r.int32();
    return omitZero && v === 0 ? "" : writeEnum(desc, v);
  };
}

function messageText(desc: DescMessage): ReadText {
  // Looked up on first use, not here: a recursive type's plan is still being made.
  let plan: Plan | undefined;
  return (r, wire, depth) => {
    if (wire !== WireType.LengthDelimited) throw NEEDS_DECODER;
    const len = r.uint32();
    plan ??= planOf(desc);
    return writeFields(plan, r, r.pos + len, depth + 1);
  };
}

/** One map entry as the decoder reads it: key 1 and value 2, zero defaults, no other field. */
function entryReader(f: DescField & { fieldKind: "map" }): (r: Reader, depth: number) => [string, string] {
  const readKey = scalarReader(f.mapKey, f.utf8Validation);
  const keyWire = wireTypeOf(f.mapKey);
  const keyZero = scalarZero(f.mapKey);
  let value: ReadText | undefined;
  let zero = "";
  if (f.mapKind === "enum") {
    value = single(WireType.Varint, enumValue(f.enum, false));
    zero = writeEnum(f.enum, f.enum.values[0]!.number);
  } else if (f.mapKind === "scalar") {
    value = single(wireTypeOf(f.scalar), scalarValue(f.scalar, f.utf8Validation, false));
    zero = writeScalar(f.scalar, scalarZero(f.scalar)());
  }
  return (r, depth) => {
    if (value === undefined) throw NEEDS_DECODER;
    const end = r.uint32() + r.pos;
    let key: unknown;
    let text: string | undefined;
    while (r.pos < end) {
      const [no, wire] = r.tag();
      if (no === 1 && wire === keyWire) key = readKey(r);
      else if (no === 2) text = value(r, wire, depth);
      else throw NEEDS_DECODER;
    }
    if (r.pos !== end) throw NEEDS_DECODER;
    return [String(key === undefined ? keyZero() : key), text ?? zero];
  };
}
