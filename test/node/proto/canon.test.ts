/**
 * The canonical hash against docs/contract.md §7 golden vectors and presence rules, byte for byte.
 */
import { createHash } from "node:crypto";
import { create, fromJson, toJson } from "@bufbuild/protobuf";
import canonicalize from "canonicalize";
import { describe, expect, it } from "vitest";
import { canonicalRecordString, contentHash, modelInputHash, specDigest } from "../../../proto/canon.js";
import { EventSchema, ModelCallSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessSpecSchema } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { normalizeEvent } from "../../../proto/normalize.js";

const G1_JSON = {
  execution_id: "exec-1",
  schema_version: 1,
  ts: "2023-11-14T22:13:20Z",
  kind: "EVENT_OUTPUT",
  message: { role: "assistant", parts: [{ text: { text: "hello" } }] },
  actor: { principal: "agent://a", issuer: "entra", subject: "sub-1" },
};
const G1_CANONICAL =
  '{"event":{"actor":{"issuer":"entra","principal":"agent://a","subject":"sub-1"},"execution_id":"exec-1","kind":"EVENT_OUTPUT","message":{"parts":[{"text":{"text":"hello"}}],"role":"assistant"},"schema_version":1,"ts":"2023-11-14T22:13:20Z"},"prev_hash":"","seq":"1"}';

function event(json: unknown) {
  return normalizeEvent(fromJson(EventSchema, json as never));
}

describe("content hash (docs/contract.md §7.4)", () => {
  it("G1: canonical bytes and hash match the golden vector", () => {
    const ev = event(G1_JSON);
    expect(canonicalRecordString(ev, "", 1n)).toBe(G1_CANONICAL);
    expect(contentHash(ev, "", 1n)).toBe("551bd146050c8d630b0c3b999a4445f3792a470db9bca443d8d4a67706283fcc");
    // An independent computation over the published canonical string agrees.
    expect(createHash("sha256").update(G1_CANONICAL).digest("hex")).toBe(contentHash(ev, "", 1n));
  });

  it("G3: an execution start with input_count 0 matches the golden vector", () => {
    const ev = event({ execution_id: "exec-default", kind: "EVENT_EXECUTION_START", execution_start: { input_count: "0" } });
    expect(contentHash(ev, "", 1n)).toBe("b09cbff45d5a30990c3b72be8b06af6bc509d5a29a849aab5fd42153ef10ec65");
  });

  it('presence: input_count absent renders execution_start:{}, zero renders input_count:"0"', () => {
    const absent = create(EventSchema, { kind: 12, body: { case: "executionStart", value: {} } });
    const zero = create(EventSchema, { kind: 12, body: { case: "executionStart", value: { inputCount: 0n } } });
    expect(canonicalRecordString(absent, "", 1n)).toContain('"execution_start":{}');
    expect(canonicalRecordString(zero, "", 1n)).toContain('"execution_start":{"input_count":"0"}');
    expect(contentHash(absent, "", 1n)).not.toBe(contentHash(zero, "", 1n));
  });

  it("seq is a decimal string and prev_hash links: changing either changes the hash", () => {
    const ev = event(G1_JSON);
    const h = contentHash(ev, "", 1n);
    expect(contentHash(ev, "", 2n)).not.toBe(h);
    expect(contentHash(ev, h, 1n)).not.toBe(h);
    expect(canonicalRecordString(ev, h, 12n)).toContain(`"prev_hash":"${h}","seq":"12"`);
  });

  it("wire rules: int64 as strings, bytes as padded base64, timestamps with Z, Struct numbers per JCS", () => {
    const ev = event({
      kind: "EVENT_EXECUTION_START",
      ts: "2023-11-14T22:13:20.500Z",
      execution_start: { config: "AP8gCgk=", resume_from_seq: "9007199254740993" },
    });
    const s = canonicalRecordString(ev, "", 1n);
    expect(s).toContain('"config":"AP8gCgk="');
    expect(s).toContain('"resume_from_seq":"9007199254740993"');
    expect(s).toContain('"ts":"2023-11-14T22:13:20.500Z"');
    const tool = event({ kind: "EVENT_TOOL_CALL", tool: { id: "c", args: { a: 2.0, b: 1.5, z: "é\u2028" } } });
    expect(canonicalRecordString(tool, "", 1n)).toContain('"args":{"a":2,"b":1.5,"z":"é\u2028"}');
  });

  it("spec_digest reproduces the published vector (§7.6)", () => {
    const spec = fromJson(HarnessSpecSchema, {
      remote: { address: "127.0.0.1:9000" },
      capabilities: { resumability: "RESUMABILITY_STATELESS_REPLAY" },
      descriptor_id: "echo",
    });
    const { digest, canonical } = specDigest(spec);
    expect(canonical).toBe('{"capabilities":{"resumability":"RESUMABILITY_STATELESS_REPLAY"},"descriptor_id":"echo","remote":{"address":"127.0.0.1:9000"}}');
    expect(digest).toBe("sha256:f0c96c8b67d5dc75be557f64ccd59496eaf9cfb102754ee54e9d4c571eb2eafc");
  });

  it("the published Session canonical form is reproduced with the same options", () => {
    const s = create(SessionSchema, {
      annotations: { note: "value" },
      harness: "echo",
      identity: { issuer: "i", principal: "p", subject: "s" },
      labels: { label: "value" },
      lastSeq: 99n,
      metadata: { name: "name", project: "tenant", uid: "s1", version: 7n },
      model: "m",
      origin: { attributes: { context: "value" }, source: "source", subject: "subject", uri: "uri" },
    });
    expect(canonicalize(toJson(SessionSchema, s, { useProtoFieldName: true }))).toBe(
      '{"annotations":{"note":"value"},"harness":"echo","identity":{"issuer":"i","principal":"p","subject":"s"},"labels":{"label":"value"},"last_seq":"99","metadata":{"name":"name","project":"tenant","uid":"s1","version":"7"},"model":"m","origin":{"attributes":{"context":"value"},"source":"source","subject":"subject","uri":"uri"}}',
    );
  });

  it("input_hash covers the request but not id or input_hash (§7.7)", () => {
    const base = { model: "m", messages: [{ role: "user", parts: [{ part: { case: "text" as const, value: { text: "hi" } } }] }] };
    const a = modelInputHash(create(ModelCallSchema, base));
    expect(modelInputHash(create(ModelCallSchema, { ...base, id: "x", inputHash: "y" }))).toBe(a);
    expect(modelInputHash(create(ModelCallSchema, { ...base, model: "n" }))).not.toBe(a);
    expect(modelInputHash(create(ModelCallSchema, { ...base, params: { temperature: "0" } }))).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
  });
});
