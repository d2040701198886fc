/**
 * The request line of a binary Exec (docs/observability.md), on a real `wrangler dev` at
 * LOG_LEVEL=info: the session object writes the answer in the caller's protocol and the Worker
 * hands it on untouched (worker/exec-stream-route.ts), so the object writes the line, once the
 * answer ended: OK, or the failure's code. A refusal before the object is the Worker's line.
 * Each request is found by its X-Request-Id.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecRequestSchema, ExecUpdateSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { envelopeFrame } from "../../../proto/record-envelopes.js";
import { type FakeOpenAi, startFakeOpenAi } from "../support/fake-openai.js";
import { type Host, startHost } from "../support/host.js";
import { rpcLineOf } from "../support/rpc-lines.js";

let host: Host;
let fake: FakeOpenAi;
beforeAll(async () => {
  fake = await startFakeOpenAi();
  host = await startHost({ vars: { MODEL_BASE_URL: fake.url, MODEL_DEFAULT: "stand-in-1", LOG_LEVEL: "info" } });
}, 120_000);
afterAll(async () => {
  await host?.stop();
  await fake?.close();
});

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

const lineOf = (requestId: string) => rpcLineOf(host.server, requestId);

/** A binary Connect Exec with its request id; the answer's messages and its end-stream JSON. */
async function exec(requestId: string, session: string, signal?: AbortSignal): Promise<{ updates: string[]; end: unknown }> {
  const body = envelopeFrame(0, toBinary(ExecRequestSchema, create(ExecRequestSchema, { session, inputs: [userText("hello")] })));
  const res = await fetch(`${host.url}/agentsessions.v1.Sessions/Exec`, {
    method: "POST",
    headers: { "content-type": "application/connect+proto", "x-request-id": requestId },
    body: body as Uint8Array<ArrayBuffer>,
    signal,
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const updates: string[] = [];
  let end: unknown;
  for (let at = 0; at + 5 <= bytes.length; ) {
    const len = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
    const data = bytes.subarray(at + 5, at + 5 + len);
    if (bytes[at] === 2) end = JSON.parse(new TextDecoder().decode(data));
    else updates.push(fromBinary(ExecUpdateSchema, data).update.case ?? "");
    at += 5 + len;
  }
  return { updates, end };
}

describe("a binary Exec's request line", () => {
  it("a streamed turn: one line from its object, OK, with its session, and its first message no later than its end", async () => {
    const uid = (await host.client.create({ harness: "chat" })).metadata!.uid;
    fake.next = () => ({ kind: "slow", chunkMs: 30, chunks: 5 });
    const r = await exec("log-streamed", uid);
    expect(r.end).toEqual({});
    expect(r.updates.filter((u) => u === "delta").length).toBeGreaterThanOrEqual(5);
    const line = await lineOf("log-streamed");
    expect(line).toMatchObject({ level: "info", msg: "rpc", tenant: "default", session: uid, operation: "Exec", outcome: "ok" });
    expect(typeof line.first_message_ms).toBe("number");
    expect(line.first_message_ms as number).toBeLessThanOrEqual(line.duration_ms as number);
    // Five chunks 30 ms apart: the line is written when the answer ended, not when it began.
    expect(line.duration_ms as number).toBeGreaterThanOrEqual(100);
  }, 60_000);

  it("a turn whose provider fails: the answer ends with the failure's code, and the line carries it at error level", async () => {
    const uid = (await host.client.create({ harness: "chat" })).metadata!.uid;
    fake.next = () => ({ kind: "error", status: 400, body: { error: { message: "no such thing" } } });
    const r = await exec("log-failed", uid);
    const code = (r.end as { error?: { code?: string } }).error?.code;
    expect(code).toBeDefined();
    const line = await lineOf("log-failed");
    expect(line).toMatchObject({ msg: "rpc", session: uid, operation: "Exec" });
    expect(line.outcome).not.toBe("ok");
    // The same code on the wire and in the line (the line names it, the wire spells it in snake case).
    expect(String(line.outcome).toLowerCase()).toBe(code!.replace(/_/g, ""));
  }, 60_000);

  it("a caller that goes away mid-answer: the turn still completes, and its request has one line", async () => {
    const uid = (await host.client.create({ harness: "chat" })).metadata!.uid;
    fake.next = () => ({ kind: "slow", chunkMs: 150, chunks: 8 });
    const ac = new AbortController();
    const gone = exec("log-left", uid, ac.signal).catch((e: unknown) => e);
    await fake.waitForRequests(fake.requests.length + 1);
    await sleep(300);
    ac.abort();
    expect(await gone).toBeInstanceOf(Error);
    // The records are durable whatever the reader did: the turn ends on its own.
    let kinds: string[] = [];
    for (let i = 0; i < 60 && !kinds.includes("END"); i++) {
      await sleep(100);
      kinds = await host.kinds(uid);
    }
    expect(kinds).toContain("END");
    // Canceled when the caller's leaving reaches the object before the answer ends (the object's
    // stream is canceled: objects/exec-frames.ts, tested in process); wrangler dev's proxy keeps
    // reading the answer after its client left, so here the answer ends first and says ok.
    const line = await lineOf("log-left");
    expect(line).toMatchObject({ msg: "rpc", session: uid, operation: "Exec" });
    expect(["ok", "Canceled"]).toContain(line.outcome);
  }, 60_000);

  it("a refusal before the session object (no such session) is the Worker's line", async () => {
    const r = await exec("log-refused", "sess-000000000000000000000000");
    expect(r.end).toMatchObject({ error: { code: "not_found" } });
    const line = await lineOf("log-refused");
    expect(line).toMatchObject({ msg: "rpc", operation: "Exec", outcome: "NotFound" });
    expect(line).not.toHaveProperty("first_message_ms");
  }, 60_000);
});
