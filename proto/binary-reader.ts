/**
 * A message from its binary protobuf, read by a decoder compiled once per message type: the same
 * message as protobuf-es's `fromBinary(schema, bytes)`, without its reflection layer (a wrapper
 * object per message, a field lookup and a type switch per field read).
 *
 * It follows fromBinary's rules: a fresh message starts from proto3's zero values (oneofs unset,
 * lists and maps empty, message and `optional` fields absent); the last value of a scalar wins, a
 * message field seen twice is merged, repeated scalars are read packed or not, map entries take
 * key 1 and value 2 with zero defaults, and fields it does not know are kept in `$unknown`; a
 * google.protobuf.Struct comes out as a plain JSON object and a wrapper type unwrapped, where
 * protobuf-es holds them so. Bytes are read by protobuf-es's own BinaryReader, so malformed input
 * fails as it does there (including invalid UTF-8 and the 100-deep nesting limit). A type outside
 * proto3 (defaults, groups, closed enums) is left to fromBinary itself.
 *
 * Property-tested against fromBinary, which stays the reference: test/node/proto/binary-reader.test.ts.
 * Its scalar readers are shared with jcs-binary.ts.
 */
import { type DescField, type DescMessage, fromBinary, type MessageShape, protoInt64, ScalarType } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { heldAsJson, WRAPPER_TYPES } from "./local-forms.js";
import "./text-encoding.js";

type Msg = Record<string, unknown>;
type ReadField = (msg: Msg, r: BinaryReader, wire: WireType, depth: number) => void;

interface Decoder {
  /** Whether this type and every type inside it can be read here (else fromBinary reads it). */
  ok: boolean;
  zero: () => Msg;
  fields: Map<number, ReadField>;
}

const RECURSION_LIMIT = 100;
const EDITION_PROTO3 = 999;
const compiled = new WeakMap<DescMessage, Decoder>();

/** The message `bytes` encode, equal to what `fromBinary(schema, bytes)` returns. */
export function decodeBinary<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): MessageShape<Desc> {
  const d = decoderOf(schema);
  if (!d.ok) return fromBinary(schema, bytes);
  const msg = d.zero();
  const r = new BinaryReader(bytes);
  readFields(schema, d, msg, r, bytes.byteLength, 1);
  return msg as MessageShape<Desc>;
}

function readFields(desc: DescMessage, d: Decoder, msg: Msg, r: BinaryReader, length: number, depth: number): void {
  if (depth > RECURSION_LIMIT) throw new Error(`cannot decode ${desc} from binary: maximum recursion depth of ${RECURSION_LIMIT} reached`);
  const end = r.pos + length;
  while (r.pos < end) {
    const [no, wire] = r.tag();
    const read = d.fields.get(no);
    if (read) {
      read(msg, r, wire, depth);
      continue;
    }
    const data = r.skip(wire, no, RECURSION_LIMIT - depth);
    ((msg.$unknown ??= []) as unknown[]).push({ no, wireType: wire, data });
  }
}

/** Reads a length-delimited message into `msg` (a fresh zero message, or one to merge into). */
function readMessage(desc: DescMessage, msg: Msg, r: BinaryReader, depth: number): Msg {
  const d = decoderOf(desc);
  readFields(desc, d, msg, r, r.uint32(), depth + 1);
  return msg;
}

function decoderOf(desc: DescMessage): Decoder {
  let d = compiled.get(desc);
  if (d) return d;
  // Set before its fields compile, so a recursive type (Struct → Value → Struct) finds itself.
  d = { ok: true, zero: zeroOf(desc), fields: new Map() };
  compiled.set(desc, d);
  if (desc.file.edition !== EDITION_PROTO3) d.ok = false;
  for (const f of desc.fields) {
    if (("delimitedEncoding" in f && f.delimitedEncoding) || (f.enum && !f.enum.open)) d.ok = false;
    d.fields.set(f.number, fieldReader(f));
  }
  for (const f of desc.fields) {
    const inner = f.message;
    if (inner && !decoderOf(inner).ok) d.ok = false;
  }
  return d;
}

/** A zero message of `desc`, shaped as protobuf-es's create() makes one for proto3. */
function zeroOf(desc: DescMessage): () => Msg {
  const inits: [string, () => unknown][] = [];
  for (const m of desc.members) {
    if (m.kind === "oneof") inits.push([m.localName, () => ({ case: undefined })]);
    else if (m.presence === IMPLICIT) inits.push([m.localName, zeroField(m)]);
  }
  const typeName = desc.typeName;
  return () => {
    const msg: Msg = { $typeName: typeName };
    for (const [name, zero] of inits) msg[name] = zero();
    return msg;
  };
}

const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT

function zeroField(f: DescField): () => unknown {
  switch (f.fieldKind) {
    case "list":
      return () => [];
    case "map":
      return () => ({});
    case "enum": {
      const zero = f.enum.values[0]!.number;
      return () => zero;
    }
    case "scalar":
      return scalarZero(f.scalar);
    default:
      return () => undefined;
  }
}

export function scalarZero(type: ScalarType): () => unknown {
  switch (type) {
    case ScalarType.STRING:
      return () => "";
    case ScalarType.BOOL:
      return () => false;
    case ScalarType.BYTES:
      return () => new Uint8Array(0);
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SFIXED64:
    case ScalarType.FIXED64:
    case ScalarType.SINT64:
      return () => protoInt64.zero;
    default:
      return () => 0;
  }
}

function fieldReader(f: DescField): ReadField {
  const name = f.localName;
  switch (f.fieldKind) {
    case "scalar":
    case "enum": {
      const read = f.fieldKind === "enum" ? (r: BinaryReader) => r.int32() : scalarReader(f.scalar, f.utf8Validation);
      if (f.oneof) {
        const group = f.oneof.localName;
        return (msg, r) => {
          msg[group] = { case: name, value: read(r) };
        };
      }
      return (msg, r) => {
        msg[name] = read(r);
      };
    }
    case "message": {
      const desc = f.message;
      const json = heldAsJson(desc, f.parent);
      if (f.oneof) {
        const group = f.oneof.localName;
        return (msg, r, _w, depth) => {
          const sel = msg[group] as { case?: string; value?: unknown };
          const into = sel.case === name ? local(desc, sel.value, json, false) : decoderOf(desc).zero();
          msg[group] = { case: name, value: toLocal(readMessage(desc, into, r, depth), json, false) };
        };
      }
      const wrapper = WRAPPER_TYPES.has(desc.typeName);
      return (msg, r, _w, depth) => {
        const into = msg[name] !== undefined ? local(desc, msg[name], json, wrapper) : decoderOf(desc).zero();
        msg[name] = toLocal(readMessage(desc, into, r, depth), json, wrapper);
      };
    }
    case "list": {
      if (f.listKind === "message") {
        const desc = f.message;
        const json = heldAsJson(desc, f.parent);
        return (msg, r, _w, depth) => {
          (msg[name] as unknown[]).push(toLocal(readMessage(desc, decoderOf(desc).zero(), r, depth), json, false));
        };
      }
      const type = f.listKind === "enum" ? ScalarType.INT32 : f.scalar;
      const read = scalarReader(type, f.utf8Validation);
      const packable = type !== ScalarType.STRING && type !== ScalarType.BYTES;
      return (msg, r, wire) => {
        const list = msg[name] as unknown[];
        if (!packable || wire !== WireType.LengthDelimited) {
          list.push(read(r));
          return;
        }
        const end = r.uint32() + r.pos;
        while (r.pos < end) list.push(read(r));
      };
    }
    case "map": {
      const readKey = scalarReader(f.mapKey, f.utf8Validation);
      const keyZero = scalarZero(f.mapKey);
      let readValue: (r: BinaryReader, depth: number) => unknown;
      let valueZero: () => unknown;
      if (f.mapKind === "message") {
        const desc = f.message;
        const json = heldAsJson(desc, f.parent);
        readValue = (r, depth) => toLocal(readMessage(desc, decoderOf(desc).zero(), r, depth), json, false);
        valueZero = () => toLocal(decoderOf(desc).zero(), json, false);
      } else if (f.mapKind === "enum") {
        readValue = (r) => r.int32();
        const zero = f.enum.values[0]!.number;
        valueZero = () => zero;
      } else {
        readValue = scalarReader(f.scalar, f.utf8Validation);
        valueZero = scalarZero(f.scalar);
      }
      return (msg, r, _w, depth) => {
        let key: unknown;
        let value: unknown;
        const len = r.uint32();
        const end = r.pos + len;
        // As protobuf-es reads an entry: fields 1 and 2, nothing else (no skip).
        while (r.pos < end) {
          const [no] = r.tag();
          if (no === 1) key = readKey(r);
          else if (no === 2) value = readValue(r, depth);
        }
        if (key === undefined) key = keyZero();
        if (value === undefined) value = valueZero();
        const k = typeof key === "string" || typeof key === "number" ? key : String(key);
        (msg[name] as Record<string | number, unknown>)[k] = value;
      };
    }
  }
}

/** A field's current value as a message to merge into (a JSON object back to a Struct, a bare value back to its wrapper). */
function local(desc: DescMessage, v: unknown, json: boolean, wrapper: boolean): Msg {
  if (json) return structFromJson(v);
  if (wrapper) return { $typeName: desc.typeName, value: v };
  return v as Msg;
}

/** A decoded message as protobuf-es holds it in the field. */
function toLocal(m: Msg, json: boolean, wrapper: boolean): unknown {
  if (json) return structToJson(m);
  if (wrapper) return m.value;
  return m;
}

function structToJson(s: Msg): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const fields = s.fields as Record<string, Msg>;
  for (const k of Object.keys(fields)) out[k] = valueToJson(fields[k]!);
  return out;
}

function valueToJson(v: Msg): unknown {
  const kind = v.kind as { case?: string; value?: unknown };
  switch (kind.case) {
    case "structValue":
      return structToJson(kind.value as Msg);
    case "listValue":
      return ((kind.value as Msg).values as Msg[]).map(valueToJson);
    case "nullValue":
    case undefined:
      return null;
    default:
      return kind.value;
  }
}

function structFromJson(json: unknown): Msg {
  const fields: Record<string, Msg> = {};
  if (json !== null && typeof json === "object" && !Array.isArray(json)) {
    for (const [k, v] of Object.entries(json)) fields[k] = valueFromJson(v);
  }
  return { $typeName: "google.protobuf.Struct", fields };
}

function valueFromJson(json: unknown): Msg {
  const value: Msg = { $typeName: "google.protobuf.Value", kind: { case: undefined } };
  switch (typeof json) {
    case "number":
      value.kind = { case: "numberValue", value: json };
      break;
    case "string":
      value.kind = { case: "stringValue", value: json };
      break;
    case "boolean":
      value.kind = { case: "boolValue", value: json };
      break;
    case "object":
      if (json === null) value.kind = { case: "nullValue", value: 0 };
      else if (Array.isArray(json)) value.kind = { case: "listValue", value: { $typeName: "google.protobuf.ListValue", values: json.map(valueFromJson) } };
      else value.kind = { case: "structValue", value: structFromJson(json) };
      break;
  }
  return value;
}

export function scalarReader(type: ScalarType, utf8: boolean): (r: BinaryReader) => unknown {
  switch (type) {
    case ScalarType.STRING:
      return (r) => r.string(utf8);
    case ScalarType.BOOL:
      return (r) => r.bool();
    case ScalarType.DOUBLE:
      return (r) => r.double();
    case ScalarType.FLOAT:
      return (r) => r.float();
    case ScalarType.INT32:
      return (r) => r.int32();
    case ScalarType.INT64:
      return (r) => r.int64();
    case ScalarType.UINT64:
      return (r) => r.uint64();
    case ScalarType.FIXED64:
      return (r) => r.fixed64();
    case ScalarType.BYTES:
      return (r) => r.bytes();
    case ScalarType.FIXED32:
      return (r) => r.fixed32();
    case ScalarType.SFIXED32:
      return (r) => r.sfixed32();
    case ScalarType.SFIXED64:
      return (r) => r.sfixed64();
    case ScalarType.SINT64:
      return (r) => r.sint64();
    case ScalarType.UINT32:
      return (r) => r.uint32();
    case ScalarType.SINT32:
      return (r) => r.sint32();
  }
}
