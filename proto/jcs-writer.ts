/**
 * RFC 8785 (JCS) text of a message's proto3-JSON (proto field names), written straight from the
 * message and its schema: the same string as `canonicalize(toJson(schema, message,
 * { useProtoFieldName: true }))`, without building the JSON tree and sorting its keys at run time.
 * Each message type's fields are sorted by name once; values are written as protobuf-es's toJson
 * writes them and as `canonicalize` serializes them (strings and numbers by JSON.stringify; a
 * lone surrogate, NaN or Infinity where JSON has no form throws, as both do).
 *
 * The hot path of every append, verify and input hash (proto/canonical-json.ts). Property-tested
 * against toJson + canonicalize, which stay the reference: test/node/proto/jcs-writer.test.ts.
 * Its value writers are shared with jcs-binary.ts, which writes the same text from binary.
 */
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { heldAsJson, WRAPPER_TYPES } from "./local-forms.js";

const sortedFields = new WeakMap<DescMessage, DescField[]>();

function fieldsOf(desc: DescMessage): DescField[] {
  let fields = sortedFields.get(desc);
  if (!fields) {
    // JCS orders keys by UTF-16 code units: plain string comparison (proto names are ASCII).
    fields = [...desc.fields].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    sortedFields.set(desc, fields);
  }
  return fields;
}

/** The JCS text of `message` (of type `schema`) as proto3-JSON with proto field names. */
export function canonicalJsonOf(schema: DescMessage, message: object): string {
  return writeMessage(schema, message as Record<string, unknown>);
}

function writeMessage(desc: DescMessage, msg: Record<string, unknown>): string {
  if (desc.typeName.startsWith("google.protobuf.")) {
    const wkt = writeWkt(desc, msg);
    if (wkt !== undefined) return wkt;
  }
  let out = "{";
  let first = true;
  for (const f of fieldsOf(desc)) {
    const v = setValueOf(f, msg);
    if (v === undefined) continue;
    const text = writeField(f, v);
    if (text === undefined) continue;
    out += (first ? '"' : ',"') + f.name + '":' + text;
    first = false;
  }
  return out + "}";
}

/** The field's value when it is set (proto3 presence), else undefined. */
function setValueOf(f: DescField, msg: Record<string, unknown>): unknown {
  if (f.oneof) {
    const sel = msg[f.oneof.localName] as { case?: string; value?: unknown } | undefined;
    return sel?.case === f.localName ? sel.value : undefined;
  }
  const v = msg[f.localName];
  if (v === undefined || v === null) return undefined;
  switch (f.fieldKind) {
    case "list":
      return (v as unknown[]).length > 0 ? v : undefined;
    case "map":
      return Object.keys(v as object).length > 0 ? v : undefined;
    case "message":
      return v;
    case "enum":
      // Explicit presence keeps a zero; implicit presence omits it.
      return f.presence === 2 && v === 0 ? undefined : v;
    case "scalar":
      return f.presence === 2 && isZero(f.scalar, v) ? undefined : v;
  }
}

export function isZero(t: ScalarType, v: unknown): boolean {
  switch (t) {
    case ScalarType.BOOL:
      return v === false;
    case ScalarType.STRING:
      return v === "";
    case ScalarType.BYTES:
      return (v as Uint8Array).length === 0;
    default:
      // Numbers (-0 included, as protobuf-es treats it) and 64-bit values as bigint or string.
      // biome-ignore lint/suspicious/noDoubleEquals: 0n == 0 and "0" == 0, as protobuf-es compares.
      return v == 0;
  }
}

function writeField(f: DescField, v: unknown): string | undefined {
  switch (f.fieldKind) {
    case "scalar":
      return writeScalar(f.scalar, v);
    case "enum":
      return writeEnum(f.enum, v as number);
    case "message":
      return writeMessageField(f, f.message, v);
    case "list": {
      const items = v as unknown[];
      let out = "[";
      for (let i = 0; i < items.length; i++) {
        if (i > 0) out += ",";
        const item = items[i];
        out +=
          f.listKind === "scalar"
            ? writeScalar(f.scalar, item)
            : f.listKind === "enum"
              ? writeEnum(f.enum, item as number)
              : writeMessageField(f, f.message!, item);
      }
      return out + "]";
    }
    case "map": {
      const obj = v as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => k !== "__proto__")
        .sort();
      let out = "{";
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        const e = obj[k];
        const text =
          f.mapKind === "scalar" ? writeScalar(f.scalar, e) : f.mapKind === "enum" ? writeEnum(f.enum, e as number) : writeMessageField(f, f.message!, e);
        out += (i > 0 ? "," : "") + writeString(k) + ":" + text;
      }
      return out + "}";
    }
  }
}

/**
 * A message-typed value as protobuf-es keeps it in a field: a google.protobuf.Struct is a plain
 * JSON object there (except inside a google.protobuf.Value), and a wrapper in a singular field
 * outside a oneof is its bare scalar.
 */
function writeMessageField(f: DescField, desc: DescMessage, v: unknown): string {
  if (heldAsJson(desc, f.parent)) {
    // Anything but a plain object reads as an empty Struct, as protobuf-es reads it.
    return v !== null && typeof v === "object" && !Array.isArray(v) ? writeJson(v) : "{}";
  }
  if (f.fieldKind === "message" && !f.oneof && WRAPPER_TYPES.has(desc.typeName)) return writeScalar(desc.fields[0]!.scalar, v);
  return writeMessage(desc, v as Record<string, unknown>);
}

/** A JSON value (a Struct as a field holds it) in JCS form, as toJson's round trip through Value writes it. */
function writeJson(v: unknown): string {
  if (v === null) return "null";
  switch (typeof v) {
    case "boolean":
      return v ? "true" : "false";
    case "number":
      if (!Number.isFinite(v)) throw new Error("google.protobuf.Value cannot be NaN or Infinity");
      return JSON.stringify(v);
    case "string":
      return writeString(v);
    case "object": {
      if (Array.isArray(v)) {
        let out = "[";
        for (let i = 0; i < v.length; i++) out += (i > 0 ? "," : "") + writeJson(v[i]);
        return out + "]";
      }
      const obj = v as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => k !== "__proto__")
        .sort();
      let out = "{";
      for (let i = 0; i < keys.length; i++) out += (i > 0 ? "," : "") + writeString(keys[i]!) + ":" + writeJson(obj[keys[i]!]);
      return out + "}";
    }
    default:
      throw new Error("google.protobuf.Value must have a value");
  }
}

export function writeEnum(desc: DescField["enum"] & object, v: number): string {
  if (desc.typeName === "google.protobuf.NullValue") return "null";
  const name = desc.value[v]?.name;
  // An enum number this schema does not know is written as the number.
  return name === undefined ? JSON.stringify(v) : '"' + name + '"';
}

export function writeScalar(t: ScalarType | undefined, v: unknown): string {
  switch (t) {
    case ScalarType.STRING:
      return writeString(v as string);
    case ScalarType.BOOL:
      return v ? "true" : "false";
    case ScalarType.BYTES:
      return '"' + base64Encode(v as Uint8Array) + '"';
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return '"' + String(v) + '"';
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE: {
      const n = v as number;
      if (Number.isNaN(n)) return '"NaN"';
      if (n === Number.POSITIVE_INFINITY) return '"Infinity"';
      if (n === Number.NEGATIVE_INFINITY) return '"-Infinity"';
      return JSON.stringify(n);
    }
    default:
      return JSON.stringify(v as number);
  }
}

/** A JSON string as JCS writes it; a lone surrogate has no form (canonicalize refuses it too). */
export function writeString(s: string): string {
  if (!(s as WellFormed).isWellFormed()) throw new Error("Lone surrogate is not allowed");
  return JSON.stringify(s);
}

/** String.prototype.isWellFormed (ES2024; Node 20 and workerd have it, the es2022 lib does not). */
export type WellFormed = string & { isWellFormed(): boolean };

// The well-known types with a JSON form of their own, as protobuf-es writes them.

function writeWkt(desc: DescMessage, msg: Record<string, unknown>): string | undefined {
  switch (desc.typeName) {
    case "google.protobuf.Struct":
      return writeStruct(msg);
    case "google.protobuf.Value":
      return writeValue(msg);
    case "google.protobuf.ListValue":
      return writeList(msg);
    case "google.protobuf.Timestamp":
      return writeTimestamp(msg);
    case "google.protobuf.Duration":
      return writeDuration(msg);
    case "google.protobuf.DoubleValue":
    case "google.protobuf.FloatValue":
    case "google.protobuf.Int64Value":
    case "google.protobuf.UInt64Value":
    case "google.protobuf.Int32Value":
    case "google.protobuf.UInt32Value":
    case "google.protobuf.BoolValue":
    case "google.protobuf.StringValue":
    case "google.protobuf.BytesValue":
      return writeScalar(desc.fields[0]!.scalar, msg.value);
    case "google.protobuf.Any":
    case "google.protobuf.FieldMask":
      // Not part of any message this host hashes: refuse rather than guess their forms.
      throw new Error(`${desc.typeName} has no canonical form here`);
    default:
      return undefined;
  }
}

function writeStruct(msg: Record<string, unknown>): string {
  const fields = (msg.fields ?? {}) as Record<string, Record<string, unknown>>;
  // toJson assigns each key on a plain object, where "__proto__" is not an own key.
  const keys = Object.keys(fields)
    .filter((k) => k !== "__proto__")
    .sort();
  let out = "{";
  for (let i = 0; i < keys.length; i++) out += (i > 0 ? "," : "") + writeString(keys[i]!) + ":" + writeValue(fields[keys[i]!]!);
  return out + "}";
}

function writeValue(msg: Record<string, unknown>): string {
  const kind = msg.kind as { case?: string; value?: unknown } | undefined;
  switch (kind?.case) {
    case "nullValue":
      return "null";
    case "numberValue": {
      const n = kind.value as number;
      if (!Number.isFinite(n)) throw new Error("google.protobuf.Value cannot be NaN or Infinity");
      return JSON.stringify(n);
    }
    case "boolValue":
      return kind.value ? "true" : "false";
    case "stringValue":
      return writeString(kind.value as string);
    case "structValue":
      return writeStruct(kind.value as Record<string, unknown>);
    case "listValue":
      return writeList(kind.value as Record<string, unknown>);
    default:
      throw new Error("google.protobuf.Value must have a value");
  }
}

function writeList(msg: Record<string, unknown>): string {
  const values = (msg.values ?? []) as Record<string, unknown>[];
  let out = "[";
  for (let i = 0; i < values.length; i++) out += (i > 0 ? "," : "") + writeValue(values[i]!);
  return out + "]";
}

const MIN_TIMESTAMP_MS = Date.parse("0001-01-01T00:00:00Z");
const MAX_TIMESTAMP_MS = Date.parse("9999-12-31T23:59:59Z");

export function writeTimestamp(msg: Record<string, unknown>): string {
  const ms = Number(msg.seconds ?? 0n) * 1000;
  const nanos = (msg.nanos as number | undefined) ?? 0;
  if (ms < MIN_TIMESTAMP_MS || ms > MAX_TIMESTAMP_MS) throw new Error("google.protobuf.Timestamp must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z");
  if (nanos < 0 || nanos > 999999999) throw new Error("google.protobuf.Timestamp nanos out of range");
  let z = "Z";
  if (nanos > 0) {
    const digits = (nanos + 1000000000).toString().substring(1);
    z = digits.substring(3) === "000000" ? `.${digits.substring(0, 3)}Z` : digits.substring(6) === "000" ? `.${digits.substring(0, 6)}Z` : `.${digits}Z`;
  }
  // The records of a turn mostly share their second: its date text is formatted once.
  if (ms !== lastSecondMs) {
    lastSecondText = new Date(ms).toISOString().slice(0, -5);
    lastSecondMs = ms;
  }
  return '"' + lastSecondText + z + '"';
}

let lastSecondMs = Number.NaN;
let lastSecondText = "";

export function writeDuration(msg: Record<string, unknown>): string {
  const secondsBig = (msg.seconds ?? 0n) as bigint;
  const seconds = Number(secondsBig);
  const nanos = (msg.nanos as number | undefined) ?? 0;
  if (seconds > 315576000000 || seconds < -315576000000) throw new Error("google.protobuf.Duration out of range");
  if ((seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0)) throw new Error("google.protobuf.Duration nanos sign must match seconds sign");
  let text = secondsBig.toString();
  if (nanos !== 0) {
    let n = Math.abs(nanos).toString();
    n = "0".repeat(9 - n.length) + n;
    if (n.substring(3) === "000000") n = n.substring(0, 3);
    else if (n.substring(6) === "000") n = n.substring(0, 6);
    text += "." + n;
    if (nanos < 0 && seconds === 0) text = "-" + text;
  }
  return '"' + text + 's"';
}
