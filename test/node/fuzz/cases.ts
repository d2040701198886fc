/**
 * The fuzz suite's request generator: for every RPC of Sessions, HarnessRegistry, EdgeRegistry and Audit, a
 * valid-ish request built with the generated schemas and aimed at the seeded sessions, the
 * "victim" sessions, random well-formed uids or malformed ones; then encoded as binary or JSON
 * (unary or in a Connect envelope) and mutated at the byte or JSON level (wire.ts, json-gen.ts),
 * or replaced by garbage, an empty body or a wrong content type.
 *
 * `protectedBy` decodes a case the way the server will and names the seeded session it could
 * change if it is valid after all (a mutating call that decodes, names a protected uid, and is not
 * refused by a stale expected_last_seq); the storm skips those, so the seeded journals must come
 * out byte for byte unchanged.
 */
import { create, fromBinary, fromJsonString, ScalarType, toBinary, toJsonString, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import { NUMBER_RULES, numberViolation } from "../../../proto/numbers.js";
import { Audit } from "../../../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { HarnessRegistry } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { Sessions, type ExecRequest } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { build } from "./requests.js";
import { deepJsonText, garbageJson, mutateJson, withInvalidUtf8 } from "./json-gen.js";
import type { Rng } from "./rng.js";
import { BYTE_MUTATIONS, concat, deepStruct, hostileEnvelope, lenField, mutateBytes, tag, utf8 } from "./wire.js";

export const METHODS: readonly DescMethod[] = [...Sessions.methods, ...HarnessRegistry.methods, ...EdgeRegistry.methods, ...Audit.methods];

export const pathOf = (m: DescMethod): string => `/${m.parent.typeName}/${m.name}`;
export const isStreaming = (m: DescMethod): boolean => m.methodKind === "server_streaming";

const WEIGHT: Record<string, number> = { Exec: 5, Fork: 2, Approve: 2, Replay: 2, CreateSession: 2 };

/** Calls that may write to the session they name when the request is valid. */
const WRITES_SESSION = new Set(["Exec", "Suspend", "Resume", "Cancel", "DeleteSession"]);

export interface Targets {
  /** Seeded sessions whose journals must not change: uid and head seq. */
  protected: { uid: string; head: bigint }[];
  /** Seeded sessions anything may be sent to (their chains must still verify). */
  victims: string[];
}

export interface Case {
  index: number;
  method: DescMethod;
  httpMethod: string;
  contentType: string;
  body: Uint8Array;
  headers: Record<string, string>;
  /** What was done to the request, for the failure message. */
  how: string[];
  /**
   * Why the answer must be INVALID_ARGUMENT by the strict-numbers rules (proto/numbers.ts): set
   * when the case wrote an integer in a form the contract does not define, or when its body,
   * read exactly as the server reads it, carries a value a rule refuses. The oracle checks it.
   */
  numbers?: string;
}

export function generateCase(rng: Rng, index: number, t: Targets): Case {
  // The calls that reach session objects with rich input get more of the budget.
  const method = rng.weighted(METHODS.map((m) => [WEIGHT[m.name] ?? 1, m] as const));
  const streaming = isStreaming(method);
  // EdgeRegistry shares method names with HarnessRegistry: its builders are qualified.
  const builder = method.parent === EdgeRegistry ? `EdgeRegistry.${method.name}` : method.name;
  const msg = create(method.input, build(rng, builder, t) as never);
  // A Struct holding NaN or Infinity has a binary encoding but no JSON one.
  const jsonText = tryJson(method.input, msg);
  const binary = jsonText === undefined || rng.chance(0.5);
  const how: string[] = [binary ? "proto" : "json"];
  let numbers: string | undefined;
  let payload = binary ? toBinary(method.input, msg) : utf8(jsonText!);

  const style = rng.weighted<string>([
    [streaming ? 3 : 2, "valid"],
    [binary ? 5 : 1, "bytes"],
    [binary ? 1 : 5, "json"],
    [binary ? 2 : 0, "deep-proto"],
    [binary ? 0 : 2, "deep-json"],
    [binary || !hasTopLevelInteger(method.input) ? 0 : 3, "number-form"],
    [1, "garbage"],
  ]);
  how.push(style);
  if (style === "bytes") {
    const strings = stringFieldsOf(method.input);
    for (
      let k = rng.weighted([
        [6, 1],
        [3, 2],
        [1, 3],
      ] as const);
      k > 0;
      k--
    ) {
      const m = rng.pick(BYTE_MUTATIONS);
      how.push(m);
      payload = mutateBytes(rng, payload, m, strings) as Uint8Array<ArrayBuffer>;
    }
  } else if (style === "json" && jsonText !== undefined) {
    const j = mutateJson(rng, JSON.parse(jsonText));
    how.push(j.how);
    payload = rng.chance(0.2) ? (withInvalidUtf8(rng, j.text) as Uint8Array<ArrayBuffer>) : utf8(j.text);
    if (payload.length !== utf8(j.text).length) how.push("invalid-utf8");
  } else if (style === "deep-proto") {
    const levels = rng.pick([20, 45, 46, 47, 48, 49, 50, 60, 200, 1500]);
    how.push(`levels=${levels}`);
    payload = concat(payload, deepField(rng, method.name, levels)) as Uint8Array<ArrayBuffer>;
  } else if (style === "deep-json") {
    const levels = rng.pick([20, 45, 46, 47, 48, 49, 50, 60, 200, 10_000]);
    how.push(`levels=${levels}`);
    payload = utf8(deepJson(rng, method.name, msg, levels));
  } else if (style === "number-form") {
    const f = numberForm(rng, method.input, JSON.parse(jsonText!) as Record<string, unknown>);
    how.push(f.how);
    payload = utf8(f.text);
    numbers = f.how;
  } else if (style === "garbage") {
    payload = garbageJson(rng, new TextDecoder().decode(payload)) as Uint8Array<ArrayBuffer>;
  }

  let contentType = streaming ? (binary ? "application/connect+proto" : "application/connect+json") : binary ? "application/proto" : "application/json";
  let body: Uint8Array = payload;
  if (streaming) {
    const e = hostileEnvelope(rng, payload);
    if (e.how !== "ok") how.push(`envelope:${e.how}`);
    body = e.body;
  }
  if (rng.chance(0.08)) {
    // gRPC-Web and gRPC, which the router also serves: every message enveloped, unary included.
    contentType = binary ? rng.pick(["application/grpc-web+proto", "application/grpc+proto", "application/grpc"]) : "application/grpc-web+json";
    const e = hostileEnvelope(rng, payload);
    body = e.body;
    how.push(`grpc:${contentType}`, ...(e.how !== "ok" ? [`envelope:${e.how}`] : []));
  } else if (rng.chance(0.06)) {
    contentType = rng.pick([
      "",
      "text/plain",
      "application/xml",
      "application/json; charset=latin1",
      "application/connect+json",
      "application/proto; x=1",
      "application/grpc-web+proto",
      "application/grpc",
      "multipart/form-data",
      streaming ? "application/json" : "application/connect+proto",
    ]);
    how.push(`content-type=${contentType || "(none)"}`);
  }
  const headers: Record<string, string> = {};
  if (rng.chance(0.08)) {
    const [k, v] = rng.pick<[string, string]>([
      ["connect-timeout-ms", rng.pick(["-1", "0", "abc", "99999999999999999999", "1"])],
      ["connect-protocol-version", rng.pick(["2", "", "1.0"])],
      ["content-encoding", rng.pick(["gzip", "br", "x-unknown"])],
      ["connect-content-encoding", rng.pick(["gzip", "identity", "zstd"])],
      ["x-request-id", rng.pick(["", "a".repeat(200), "bad id\u00e9", "../../etc"])],
    ]);
    headers[k] = v;
    how.push(`header ${k}=${v}`);
  }
  const httpMethod = rng.chance(0.03) ? rng.pick(["GET", "PUT", "DELETE", "PATCH"]) : "POST";
  if (httpMethod !== "POST") how.push(httpMethod);
  const c: Case = { index, method, httpMethod, contentType, body, headers, how };
  if (isClean(c, payload)) c.numbers = numbers ?? numbersRefused(c, payload);
  return c;
}

const INTEGER_SCALARS = new Set([ScalarType.INT32, ScalarType.INT64, ScalarType.UINT32, ScalarType.UINT64]);

function integerFields(desc: DescMessage) {
  return desc.fields.filter((f) => f.fieldKind === "scalar" && INTEGER_SCALARS.has(f.scalar));
}

function hasTopLevelInteger(desc: DescMessage): boolean {
  return integerFields(desc).length > 0;
}

/**
 * The JSON text of the request with one top-level integer field written in a form the contract
 * does not define (hex, exponent, fraction, sign, padding), or negative where a rule forbids it.
 */
function numberForm(rng: Rng, desc: DescMessage, doc: Record<string, unknown>): { text: string; how: string } {
  const f = rng.pick(integerFields(desc));
  const ruled = NUMBER_RULES[`${desc.typeName}.${f.name}`] !== undefined;
  const forms = ['"0x10"', '"1e1"', "1e1", "1E1", "10.0", '"10.0"', '"+3"', '" 7"', '"7 "', "2.5e0", ...(ruled ? ["-1", '"-5"'] : [])];
  const token = rng.pick(forms);
  const text = JSON.stringify({ ...doc, [rng.chance(0.5) ? f.jsonName : f.name]: "__number__" }).replace('"__number__"', token);
  return { text, how: `number-form ${f.name}=${token}` };
}

/**
 * Whether the server reads this case as a clean request: the method's own content type, a single
 * well-formed envelope for a stream, small enough, no hostile headers. Only then is the answer to
 * a refused number certain to be about the number.
 */
function isClean(c: Case, payload: Uint8Array): boolean {
  if (c.httpMethod !== "POST" || Object.keys(c.headers).length > 0 || payload.length > 1_000_000) return false;
  const streaming = isStreaming(c.method);
  const ok = streaming ? ["application/connect+json", "application/connect+proto"] : ["application/json", "application/proto"];
  if (!ok.includes(c.contentType)) return false;
  // A stream's body must be exactly one plain envelope around the payload.
  return streaming ? c.body.length === payload.length + 5 && c.body[0] === 0 : c.body === payload;
}

/** Why a clean case's body, decoded as the server decodes it, carries a value a number rule refuses. */
function numbersRefused(c: Case, payload: Uint8Array): string | undefined {
  const json = c.contentType.endsWith("json");
  let msg: object;
  try {
    msg = json
      ? fromJsonString(c.method.input, new TextDecoder("utf-8", { fatal: true }).decode(payload), { ignoreUnknownFields: false })
      : fromBinary(c.method.input, payload);
  } catch {
    return undefined;
  }
  return numberViolation(c.method.input, msg);
}

/**
 * The protected session this case could change if the server accepted it, decoding it exactly as
 * the server would (same library, same options); undefined when it cannot change one.
 */
export function protectedBy(c: Case, t: Targets): string | undefined {
  if (!WRITES_SESSION.has(c.method.name) || c.httpMethod !== "POST") return undefined;
  for (const msg of readings(c)) {
    const uid = "session" in msg ? (msg.session as string) : "uid" in msg ? (msg.uid as string) : "";
    const p = t.protected.find((s) => s.uid === uid);
    if (!p) continue;
    // A stale expected_last_seq is refused with ABORTED before anything is written.
    const cas = c.method.name === "Exec" ? (msg as unknown as ExecRequest).expectedLastSeq : undefined;
    if (cas !== undefined && cas !== p.head) continue;
    return p.uid;
  }
  return undefined;
}

/**
 * Every way the server might read the body (whole, or after an envelope header, as binary or JSON)
 * that decodes: an over-approximation, so nothing that could be valid slips through.
 */
function readings(c: Case): Record<string, unknown>[] {
  const bodies = [c.body];
  if (c.body.length >= 5) {
    const len = new DataView(c.body.buffer, c.body.byteOffset).getUint32(1);
    bodies.push(c.body.subarray(5), c.body.subarray(5, 5 + len));
  }
  const out: Record<string, unknown>[] = [];
  for (const b of bodies) {
    for (const json of [false, true]) {
      try {
        const m = json ? fromJsonString(c.method.input, new TextDecoder().decode(b), { ignoreUnknownFields: false }) : fromBinary(c.method.input, b);
        out.push(m as unknown as Record<string, unknown>);
      } catch {
        // not this reading
      }
    }
  }
  return out;
}

function tryJson(desc: DescMessage, msg: Parameters<typeof toJsonString>[1]): string | undefined {
  try {
    return toJsonString(desc, msg);
  } catch {
    return undefined;
  }
}

function stringFieldsOf(desc: DescMessage): number[] {
  return desc.fields.filter((f) => f.fieldKind === "scalar" && f.scalar === 9).map((f) => f.number);
}

/** Binary fields appended to a request that nest a Struct (or groups) `levels` deep. */
function deepField(rng: Rng, method: string, levels: number): Uint8Array {
  if (method === "Exec" && rng.chance(0.8)) {
    // ExecRequest.inputs(2) -> Message.parts(2) -> Part.data(3) | Part.tool_call(5) -> Struct
    const part = rng.chance(0.5)
      ? lenField(3, lenField(1, deepStruct(levels))) // DataPart.data
      : lenField(5, concat(lenField(1, utf8("c1")), lenField(2, utf8("t")), lenField(3, deepStruct(levels)))); // ToolCall.args
    return lenField(2, concat(lenField(1, utf8("user")), lenField(2, part)));
  }
  // Unknown-field groups nested `levels` deep: skipped by the parser, but recursively.
  const field = rng.range(90, 99);
  const open: number[] = [];
  const close: number[] = [];
  for (let i = 0; i < levels; i++) {
    open.push(...tag(field, 3));
    close.unshift(...tag(field, 4));
  }
  return new Uint8Array([...open, ...close]);
}

/** JSON for a request with a Struct (or any field) nested `levels` deep. */
function deepJson(rng: Rng, method: string, msg: unknown, levels: number): string {
  const nested = deepJsonText(rng, levels);
  if (method === "Exec") {
    const session = JSON.stringify((msg as ExecRequest).session);
    const part = rng.chance(0.5) ? `{"data":{"data":{"a":${nested}}}}` : `{"toolCall":{"id":"c1","tool":"t","args":{"a":${nested}}}}`;
    const cas = (msg as ExecRequest).expectedLastSeq;
    return `{"session":${session},${cas !== undefined ? `"expectedLastSeq":"${cas}",` : ""}"inputs":[{"role":"user","parts":[${part}]}]}`;
  }
  return `{"${rng.pick(["session", "uid", "name", "labels", "spec"])}":${nested}}`;
}
