/**
 * Strict numbers against a real `wrangler dev` (issue 11 §4; proto/numbers.ts): a negative seq or
 * count, or an integer written in a form the contract does not define, is INVALID_ARGUMENT naming
 * the field and the range, in JSON and binary alike, and a harness event with a negative number is
 * refused at the tunnel. The JSON number tokens (1e1, 10.0) need workerd's JSON.parse source text.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { HarnessDescriptorSchema, Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { type Harness, serve, type Serving } from "../../../sdk/harness/index.js";

const url = inject("serverUrl");
const client = new SessionsClient({ server: url });
let uid: string;

async function unary(method: string, body: string): Promise<{ status: number; code?: string; message?: string }> {
  const res = await fetch(`${url}/agentsessions.v1.Sessions/${method}`, { method: "POST", headers: { "content-type": "application/json" }, body });
  const j = (await res.json()) as { code?: string; message?: string };
  return { status: res.status, ...j };
}

async function stream(method: string, body: string): Promise<string> {
  const payload = new TextEncoder().encode(body);
  const frame = new Uint8Array(5 + payload.length);
  new DataView(frame.buffer).setUint32(1, payload.length);
  frame.set(payload, 5);
  const res = await fetch(`${url}/agentsessions.v1.Sessions/${method}`, {
    method: "POST",
    headers: { "content-type": "application/connect+json" },
    body: frame,
  });
  return new TextDecoder().decode(await res.arrayBuffer());
}

async function childrenOf(parent: string): Promise<number> {
  let n = 0;
  for await (const s of client.list({ pageSize: 500 })) if (s.parentUid === parent) n++;
  return n;
}

beforeAll(async () => {
  uid = (await client.exec({ inputs: ["one"] })).session.metadata!.uid;
});

describe("strict numbers over JSON and binary", () => {
  it("Fork: a negative count or at_seq is invalid_argument naming the field and its range, and forks nothing", async () => {
    const count = await unary("Fork", JSON.stringify({ session: uid, count: -1 }));
    expect(count).toMatchObject({ status: 400, code: "invalid_argument" });
    expect(count.message).toContain("count must be 0 or more (0 for one child), got -1");
    const at = await unary("Fork", JSON.stringify({ session: uid, at_seq: -1 }));
    expect(at.message).toContain("at_seq must be 0 or more (0 for the head), got -1");
    expect(await childrenOf(uid)).toBe(0);
  });

  it("Fork: a count written as hex, an exponent (string or number) or a fraction is invalid_argument; a decimal string is fine", async () => {
    for (const written of ['"0x10"', '"1e1"', "1e1", "10.0", '"+2"']) {
      const r = await unary("Fork", `{"session": ${JSON.stringify(uid)}, "count": ${written}}`);
      expect(r.code, written).toBe("invalid_argument");
      expect(r.message, written).toContain("count is written");
    }
    expect(await childrenOf(uid)).toBe(0);
    const ok = await unary("Fork", `{"session": ${JSON.stringify(uid)}, "count": "2"}`);
    expect(ok.status).toBe(200);
    expect(await childrenOf(uid)).toBe(2);
  });

  it("Replay and ListSessions: negative seqs and page sizes are refused, 0 keeps its meaning", async () => {
    const replay = await stream("Replay", JSON.stringify({ session: uid, from_seq: -5, to_seq: -2 }));
    expect(replay).toMatch(/"code":"invalid_argument".*_seq must be 0 or more/);
    expect(await stream("Replay", JSON.stringify({ session: uid, from_seq: 0 }))).toContain('"seq":"1"');
    const list = await unary("ListSessions", JSON.stringify({ page_size: -1 }));
    expect(list.message).toContain("page_size must be 0 or more");
    expect((await unary("ListSessions", JSON.stringify({ page_size: 0 }))).status).toBe(200);
  });

  it("Exec and Approve: negative cursors, deadlines and request seqs are refused in binary as in JSON", async () => {
    const codeOf = (p: Promise<unknown>) =>
      p.then(
        () => -1,
        (e: unknown) => ConnectError.from(e).code,
      );
    expect(await codeOf(client.raw.fork({ session: uid, count: -3 }))).toBe(Code.InvalidArgument);
    expect(await codeOf(client.exec({ session: uid, inputs: ["x"], expectedLastSeq: -1n }))).toBe(Code.InvalidArgument);
    const deadline = await stream("Exec", JSON.stringify({ session: uid, deadline_unix: "-1" }));
    expect(deadline).toContain("deadline_unix must be 0 or more (0 for no deadline)");
    const approve = await unary("Approve", JSON.stringify({ session: uid, execution_id: "e", tool_call_id: "t", request_seq: "0x3", approved: true }));
    expect(approve.message).toContain("request_seq is written");
    // Nothing above reached the journal.
    expect((await client.get(uid)).lastSeq).toBe(5n);
  });
});

describe("strict numbers over the tunnel", () => {
  let serving: Serving | undefined;
  afterAll(async () => {
    serving?.close();
    await serving?.stopped.catch(() => undefined);
  });

  it("tunnel: an event with a negative token count is refused with the field and range; the turn fails and nothing of it is journaled", async () => {
    const negative: Harness = {
      describe: () => create(HarnessDescriptorSchema, { id: "negative", version: "1", capabilities: { resumability: Resumability.STATELESS_REPLAY } }),
      async run(_start, sink) {
        await sink.usage({ model: "m", inputTokens: -1n, outputTokens: 2n } as never);
        await sink.output("never");
      },
    };
    serving = serve({ url, name: "negative-usage", harness: negative, backoff: { initialMs: 50, maxMs: 200 } });
    await serving.connected;
    const err = await client.exec({ harness: "negative-usage", inputs: ["go"] }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.rawMessage).toContain("usage.input_tokens must be 0 or more, got -1");
  });
});
