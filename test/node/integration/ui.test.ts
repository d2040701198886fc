/**
 * The inspector page (worker/ui-page.ts) against the shared `wrangler dev`: it is served at `/`,
 * its inline script parses, and its in-browser chain verifier (UI_CANON_JS, run here with
 * `new Function`) reproduces CONTRACT.md §7 and accepts the server's own records.
 */
import { createHash } from "node:crypto";
import { fromJson } from "@bufbuild/protobuf";
import { describe, expect, inject, it } from "vitest";
import { canonicalRecordString, contentHash as serverContentHash } from "../../../proto/canon.js";
import { EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { normalizeEvent } from "../../../proto/normalize.js";
import { INSPECTOR_HTML, UI_CANON_JS } from "../../../worker/ui-page.js";

type Json = Record<string, unknown>;
interface LogRecordJson {
  seq: string;
  prevHash?: string;
  contentHash: string;
  event: Json;
}
type Verdict = { ok: true; count: number; headSeq: string; headHash: string } | { ok: false; seq: string; reason: string };
interface Canon {
  jcs(value: unknown): string;
  toProtoNames(value: unknown): unknown;
  canonicalRecord(event: Json, prevHash: string, seq: string): string;
  contentHash(event: Json, prevHash: string, seq: string): Promise<string>;
  verifyChain(records: LogRecordJson[]): Promise<Verdict>;
}

/** The page's own helpers, from the same text the page inlines. */
const canon = new Function(`${UI_CANON_JS}\nreturn { jcs, toProtoNames, canonicalRecord, contentHash, verifyChain };`)() as Canon;

const baseUrl = () => inject("serverUrl");

const G1_PROTO_NAMES = {
  execution_id: "exec-1",
  schema_version: 1,
  ts: "2023-11-14T22:13:20Z",
  kind: "EVENT_OUTPUT",
  message: { role: "assistant", parts: [{ text: { text: "hello" } }] },
  actor: { principal: "agent://a", issuer: "entra", subject: "sub-1" },
};
const G1_JSON_NAMES = { ...G1_PROTO_NAMES, executionId: "exec-1", schemaVersion: 1 } as Json;
delete G1_JSON_NAMES.execution_id;
delete G1_JSON_NAMES.schema_version;
const G1_HASH = "551bd146050c8d630b0c3b999a4445f3792a470db9bca443d8d4a67706283fcc";
const G1_CANONICAL =
  '{"event":{"actor":{"issuer":"entra","principal":"agent://a","subject":"sub-1"},"execution_id":"exec-1","kind":"EVENT_OUTPUT","message":{"parts":[{"text":{"text":"hello"}}],"role":"assistant"},"schema_version":1,"ts":"2023-11-14T22:13:20Z"},"prev_hash":"","seq":"1"}';

async function unary(method: string, body: unknown): Promise<Json> {
  const res = await fetch(`${baseUrl()}/agentsessions.v1.Sessions/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Json;
  if (!res.ok) throw new Error(`${method}: ${String(json.code)}: ${String(json.message)}`);
  return json;
}

/** A server-streaming call with Connect envelopes; returns the messages, throws the end-stream error. */
async function serverStream(method: string, body: unknown): Promise<Json[]> {
  const payload = Buffer.from(JSON.stringify(body));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  const res = await fetch(`${baseUrl()}/agentsessions.v1.Sessions/${method}`, {
    method: "POST",
    headers: { "content-type": "application/connect+json" },
    body: Buffer.concat([head, payload]),
  });
  expect(res.status).toBe(200);
  const buf = Buffer.from(await res.arrayBuffer());
  const out: Json[] = [];
  for (let at = 0; at < buf.length; ) {
    const flags = buf[at]!;
    const size = buf.readUInt32BE(at + 1);
    const json = JSON.parse(buf.subarray(at + 5, at + 5 + size).toString("utf8")) as Json;
    at += 5 + size;
    if (flags & 0x02) {
      if (json.error) throw new Error(`${method}: ${JSON.stringify(json.error)}`);
      return out;
    }
    out.push(json);
  }
  throw new Error(`${method}: no end-of-stream frame`);
}

function inlineScript(html: string): string {
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)];
  expect(scripts).toHaveLength(1);
  return scripts[0]![1]!;
}

describe("inspector page", () => {
  it("GET /: serves the page as text/html with a same-origin-only policy", async () => {
    const res = await fetch(`${baseUrl()}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("connect-src 'self'");
    // The policy admits exactly the page's inline script, by hash.
    const scriptHash = createHash("sha256").update(inlineScript(INSPECTOR_HTML)).digest("base64");
    expect(csp).toContain(`script-src 'sha256-${scriptHash}'`);
    const style = /<style>([\s\S]*?)<\/style>/.exec(INSPECTOR_HTML)![1]!;
    expect(csp).toContain(`style-src 'sha256-${createHash("sha256").update(style).digest("base64")}'`);
    const html = await res.text();
    expect(html).toBe(INSPECTOR_HTML);
    expect(html).toContain("<title>agentsessions inspector</title>");
    // Self-contained: nothing loaded from anywhere else.
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script[^>]*\ssrc=|<link[^>]*stylesheet/);
  });

  it("page script: parses, embeds the tested verifier, and never writes markup or logs", () => {
    const script = inlineScript(INSPECTOR_HTML);
    expect(() => new Function(script)).not.toThrow();
    expect(script).toContain(UI_CANON_JS);
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|console\./);
  });
});

describe("page verifier (CONTRACT.md §7)", () => {
  it("G1: proto names and JSON names both hash to the golden vector", async () => {
    expect(canon.canonicalRecord(G1_PROTO_NAMES, "", "1")).toBe(G1_CANONICAL);
    expect(canon.canonicalRecord(G1_JSON_NAMES, "", "1")).toBe(G1_CANONICAL);
    expect(await canon.contentHash(G1_PROTO_NAMES, "", "1")).toBe(G1_HASH);
    expect(await canon.contentHash(G1_JSON_NAMES, "", "1")).toBe(G1_HASH);
  });

  it('G3: an execution start with inputCount "0" hashes to the golden vector', async () => {
    const event = { executionId: "exec-default", kind: "EVENT_EXECUTION_START", executionStart: { inputCount: "0" } };
    expect(await canon.contentHash(event, "", "1")).toBe("b09cbff45d5a30990c3b72be8b06af6bc509d5a29a849aab5fd42153ef10ec65");
  });

  it("canonical form: keys of maps and Structs keep their case; fields are snake-cased", () => {
    const event = {
      kind: "EVENT_TOOL_CALL",
      tool: { id: "c1", tool: "t", args: { someKey: 1, nested: { innerKey: 2.0 } }, idempotencyKey: "k" },
    };
    expect(canon.canonicalRecord(event, "", "1")).toBe(
      '{"event":{"kind":"EVENT_TOOL_CALL","tool":{"args":{"nested":{"innerKey":2},"someKey":1},"id":"c1","idempotency_key":"k","tool":"t"}},"prev_hash":"","seq":"1"}',
    );
  });

  // Same events through the server's canon (protobuf-es + canonicalize) and the page's.
  const shapes: Array<[string, Json]> = [
    [
      "model call with params",
      { executionId: "e", kind: "EVENT_MODEL_CALL", model: { model: "m", params: { maxTokens: "9", top_p: "1" }, inputHash: "ab", id: "x" } },
    ],
    [
      "tool result with Struct output",
      {
        kind: "EVENT_TOOL_RESULT",
        result: {
          id: "c",
          output: { camelKey: [1, 1.5, "é"], snake_key: null },
          isError: true,
          code: "EXECUTOR_ERROR",
          approvalRequestSeq: "7",
          approvalDecisionSeq: "8",
        },
      },
    ],
    [
      "message with data, file and reasoning parts",
      {
        kind: "EVENT_INPUT",
        message: {
          role: "user",
          parts: [
            { data: { data: { aB: { cD: true } } } },
            { file: { mime: "image/png", bytes: "AP8gCgk=", name: "n" } },
            { reasoning: { provider: "p", modelId: "m", opaqueBytes: "AQ==", validityScope: "e" } },
          ],
        },
      },
    ],
    ["approval result", { kind: "EVENT_APPROVAL_RESULT", approvalResult: { toolCallId: "c", approved: true, requestSeq: "3" } }],
    [
      "suspend lifecycle",
      { kind: "EVENT_LIFECYCLE", lifecycle: { kind: "LIFECYCLE_SUSPEND", snapshotLocal: "s", snapshotExternalUri: "u", snapshotMemory: true } },
    ],
    ["end with an empty error", { executionId: "e", kind: "EVENT_END", end: { state: "FAILED", error: {} } }],
    ["usage", { kind: "EVENT_USAGE", usage: { model: "m", inputTokens: "12", outputTokens: "9007199254740993", reasoningTokens: "1" } }],
  ];
  it.each(shapes)("canonical form: %s matches the server's canon", async (_name, event) => {
    const normalized = normalizeEvent(fromJson(EventSchema, event as never));
    expect(canon.canonicalRecord(event, "ff", "42")).toBe(canonicalRecordString(normalized, "ff", 42n));
    expect(await canon.contentHash(event, "ff", "42")).toBe(serverContentHash(normalized, "ff", 42n));
  });
});

describe("page verifier against a real journal", () => {
  async function turnRecords(): Promise<LogRecordJson[]> {
    const session = await unary("CreateSession", { session: { metadata: { project: "ui-test", name: "verify" }, harness: "echo" } });
    const uid = (session.metadata as Json).uid as string;
    const updates = await serverStream("Exec", { session: uid, inputs: [{ role: "user", parts: [{ text: { text: "hello" } }] }] });
    expect(updates.filter((u) => u.record)).toHaveLength(5);
    return (await serverStream("Replay", { session: uid })) as unknown as LogRecordJson[];
  }

  it("verifyChain: accepts every record of an Exec turn read back with Replay", async () => {
    const records = await turnRecords();
    expect(records.map((r) => r.seq)).toEqual(["1", "2", "3", "4", "5"]);
    expect(await canon.verifyChain(records)).toEqual({ ok: true, count: 5, headSeq: "5", headHash: records[4]!.contentHash });
  });

  it("verifyChain: names the first bad seq when a text, a link or a record is altered", async () => {
    const records = await turnRecords();
    const altered = structuredClone(records);
    const output = altered[3]!.event as { kind: string; message: { parts: Array<{ text: { text: string } }> } };
    expect(output.kind).toBe("EVENT_OUTPUT");
    output.message.parts[0]!.text.text = "echo:HELLO";
    expect(await canon.verifyChain(altered)).toMatchObject({ ok: false, seq: "4" });

    const relinked = structuredClone(records);
    relinked[2]!.prevHash = relinked[0]!.contentHash;
    expect(await canon.verifyChain(relinked)).toMatchObject({ ok: false, seq: "3" });

    const gap = records.filter((r) => r.seq !== "2");
    expect(await canon.verifyChain(gap)).toMatchObject({ ok: false, seq: "3" });
  });
});
