/**
 * The binary fast paths in front of the router (worker/exec-stream-route.ts,
 * worker/record-stream-route.ts) against the router itself, on a real `wrangler dev`: a binary
 * Exec, Replay or Tail (one plain envelope) takes the fast path; the same call in JSON, or with a
 * deadline header, goes through connect-es. Both must give the same messages, the same errors in
 * the same words, and a well-formed ending in Connect and gRPC-Web alike.
 */
import { create, fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LogRecordSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecRequestSchema, ExecUpdateSchema, ReplayRequestSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { TailRequestSchema, TailResponseSchema } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { userText } from "../../../proto/messages.js";
import { ChainVerifier } from "../../../proto/verify.js";
import { type Host, startHost } from "../support/host.js";
import { envelopeFrame } from "../../../proto/record-envelopes.js";

let host: Host;
beforeAll(async () => {
  host = await startHost();
}, 120_000);
afterAll(async () => {
  await host?.stop();
});

interface Frame {
  flags: number;
  data: Uint8Array;
}

function frames(body: Uint8Array): Frame[] {
  const out: Frame[] = [];
  for (let at = 0; at + 5 <= body.length; ) {
    const len = new DataView(body.buffer, body.byteOffset + at + 1, 4).getUint32(0);
    out.push({ flags: body[at]!, data: body.subarray(at + 5, at + 5 + len) });
    at += 5 + len;
  }
  return out;
}

async function call(
  method: string,
  contentType: string,
  body: Uint8Array,
  headers: Record<string, string> = {},
): Promise<{ status: number; frames: Frame[]; bytes: number; contentLength: string | null }> {
  // A method with its service (Service/Method) names it whole; otherwise it is one of Sessions'.
  const path = method.includes("/") ? method : `agentsessions.v1.Sessions/${method}`;
  const res = await fetch(`${host.url}/${path}`, {
    method: "POST",
    headers: { "content-type": contentType, ...headers },
    body: body as Uint8Array<ArrayBuffer>,
  });
  const answer = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, frames: frames(answer), bytes: answer.length, contentLength: res.headers.get("content-length") };
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** A Connect stream's messages (binary or JSON, as ExecUpdate JSON) and its end-stream JSON. */
function connectStream(r: { frames: Frame[] }, json: boolean) {
  const messages = r.frames
    .filter((f) => (f.flags & 0x02) === 0)
    .map((f) => (json ? JSON.parse(text(f.data)) : toJson(ExecUpdateSchema, fromBinary(ExecUpdateSchema, f.data))));
  const end = r.frames.find((f) => f.flags & 0x02);
  return { messages, end: end ? (JSON.parse(text(end.data)) as { error?: { code: string; message: string } }) : undefined };
}

/** An update's shape, without what differs between two turns (ids, times, hashes, uids). */
function shape(u: Record<string, unknown>): string {
  if (u.session) return "session";
  const record = u.record as { seq: string; event: { kind: string } } | undefined;
  if (record) return `record ${record.seq} ${record.event.kind}`;
  return Object.keys(u).join(",");
}

const execBody = (session: string, input: string, extra: Partial<{ expectedLastSeq: bigint }> = {}) =>
  create(ExecRequestSchema, { session, inputs: [userText(input)], ...extra });

describe("binary fast paths against the router", () => {
  it("exec: a binary turn (fast path) and a JSON turn (router) stream the same updates and both end OK", async () => {
    const a = (await host.client.create({ name: "fast" })).metadata!.uid;
    const b = (await host.client.create({ name: "router" })).metadata!.uid;
    const fast = await call("Exec", "application/connect+proto", envelopeFrame(0, toBinary(ExecRequestSchema, execBody(a, "hello"))));
    const json = JSON.stringify(toJson(ExecRequestSchema, execBody(b, "hello")));
    const routed = await call("Exec", "application/connect+json", envelopeFrame(0, new TextEncoder().encode(json)));
    expect(fast.status).toBe(200);
    expect(routed.status).toBe(200);
    const f = connectStream(fast, false);
    const r = connectStream(routed, true);
    expect(f.messages.map(shape)).toEqual(r.messages.map(shape));
    expect(f.messages.map(shape)).toEqual([
      "session",
      "record 1 EVENT_EXECUTION_START",
      "record 2 EVENT_INPUT",
      "record 3 EVENT_MODEL_CALL",
      "record 4 EVENT_OUTPUT",
      "record 5 EVENT_END",
    ]);
    expect(f.end).toEqual({});
    expect(r.end).toEqual({});
    // An echo turn never waits: the fast path answers it as one body of known length.
    expect(fast.contentLength).toBe(String(fast.bytes));
    // What the fast path relayed is the journal itself: every record Replay serves, byte for byte.
    const served = await host.records(a);
    const relayed = fast.frames
      .filter((x) => x.flags === 0)
      .map((x) => fromBinary(ExecUpdateSchema, x.data))
      .flatMap((u) => (u.update.case === "record" ? [u.update.value] : []));
    expect(relayed.map((x) => toBinary(LogRecordSchema, x))).toEqual(served.map((x) => toBinary(LogRecordSchema, x)));
    const v = new ChainVerifier();
    for (const rec of relayed) v.push({ seq: rec.seq, prevHash: rec.prevHash, hash: rec.contentHash, event: rec.event! });
    expect(v.report().ok).toBe(true);
  });

  it("exec: refusals before and during the stream carry the router's code and words (unknown session, stale cursor, bad number)", async () => {
    const uid = (await host.client.create({ name: "refusals" })).metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["one"] });
    const cases: { name: string; req: ReturnType<typeof execBody> }[] = [
      { name: "unknown session", req: execBody("sess-000000000000", "x") },
      { name: "stale cursor", req: execBody(uid, "x", { expectedLastSeq: 1n }) },
      { name: "negative cursor", req: execBody(uid, "x", { expectedLastSeq: -3n }) },
    ];
    for (const c of cases) {
      const fast = connectStream(await call("Exec", "application/connect+proto", envelopeFrame(0, toBinary(ExecRequestSchema, c.req))), false);
      const json = JSON.stringify(toJson(ExecRequestSchema, c.req));
      const routed = connectStream(await call("Exec", "application/connect+json", envelopeFrame(0, new TextEncoder().encode(json))), true);
      expect(fast.end?.error, c.name).toBeDefined();
      expect(fast.end, c.name).toEqual(routed.end);
      // The stale cursor is refused after the session frame, in both.
      expect(fast.messages.map(shape), c.name).toEqual(routed.messages.map(shape));
    }
    // Nothing was written by any of them.
    expect((await host.client.get(uid)).lastSeq).toBe(5n);
  });

  it("exec: a deadline header takes the router, which applies it; the answer is the same stream", async () => {
    const uid = (await host.client.create({ name: "deadline" })).metadata!.uid;
    const r = connectStream(
      await call("Exec", "application/connect+proto", envelopeFrame(0, toBinary(ExecRequestSchema, execBody(uid, "x"))), { "connect-timeout-ms": "30000" }),
      false,
    );
    expect(r.messages.map(shape)).toHaveLength(6);
    expect(r.end).toEqual({});
  });

  it("exec over gRPC-Web: the fast path ends with a trailer frame, grpc-status 0, or the error's status and message", async () => {
    const uid = (await host.client.create({ name: "grpc-web" })).metadata!.uid;
    const ok = await call("Exec", "application/grpc-web+proto", envelopeFrame(0, toBinary(ExecRequestSchema, execBody(uid, "x"))), { "x-grpc-web": "1" });
    const trailer = ok.frames.find((f) => f.flags & 0x80);
    expect(ok.frames.filter((f) => f.flags === 0)).toHaveLength(6);
    expect(text(trailer!.data)).toMatch(/grpc-status: ?0/);
    const bad = await call("Exec", "application/grpc-web+proto", envelopeFrame(0, toBinary(ExecRequestSchema, execBody("sess-000000000000", "x"))), {
      "x-grpc-web": "1",
    });
    const t = text(bad.frames.find((f) => f.flags & 0x80)!.data);
    expect(t).toMatch(/grpc-status: ?5/);
    expect(t).toMatch(/grpc-message: /);
  });

  it("replay: the binary fast path and the JSON router serve the same records", async () => {
    const uid = (await host.client.create({ name: "replay" })).metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["one"] });
    await host.client.exec({ session: uid, inputs: ["two"] });
    const req = create(ReplayRequestSchema, { session: uid, fromSeq: 2n, toSeq: 9n });
    const fast = await call("Replay", "application/connect+proto", envelopeFrame(0, toBinary(ReplayRequestSchema, req)));
    const routed = await call(
      "Replay",
      "application/connect+json",
      envelopeFrame(0, new TextEncoder().encode(JSON.stringify(toJson(ReplayRequestSchema, req)))),
    );
    const fastRecords = fast.frames.filter((f) => f.flags === 0).map((f) => f.data);
    const routedRecords = routed.frames.filter((f) => f.flags === 0).map((f) => toBinary(LogRecordSchema, fromJson(LogRecordSchema, JSON.parse(text(f.data)))));
    expect(fastRecords).toHaveLength(8);
    expect(fastRecords).toEqual(routedRecords);
    expect(JSON.parse(text(fast.frames.at(-1)!.data))).toEqual({});
  });

  it("replay: a 5.8 MB answer of 60 kB records is every record, a chain that verifies, ending OK", async () => {
    const uid = (await host.client.create({ name: "replay-long" })).metadata!.uid;
    // Each turn records 32 inputs of 60 kB (under the blob threshold, so inline): 5.8 MB in all.
    for (const c of "abc") await host.client.exec({ session: uid, inputs: Array.from({ length: 32 }, (_, i) => `${c}${i}`.padEnd(60_000, c)) });
    const head = (await host.client.get(uid)).lastSeq;
    const fast = await call(
      "Replay",
      "application/connect+proto",
      envelopeFrame(0, toBinary(ReplayRequestSchema, create(ReplayRequestSchema, { session: uid }))),
    );
    const records = fast.frames.filter((f) => f.flags === 0).map((f) => fromBinary(LogRecordSchema, f.data));
    expect(fast.frames.reduce((n, f) => n + 5 + f.data.length, 0)).toBeGreaterThan(5_000_000);
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: Number(head) }, (_, i) => BigInt(i + 1)));
    const v = new ChainVerifier();
    for (const r of records) v.push({ seq: r.seq, prevHash: r.prevHash, hash: r.contentHash, event: r.event! });
    expect(v.report()).toMatchObject({ ok: true, records: head });
    expect(fast.frames.at(-1)!.flags).toBe(0x02);
    expect(JSON.parse(text(fast.frames.at(-1)!.data))).toEqual({});
  });

  const TAIL = "agentsessions.edge.v1.Tail/Tail";
  const tailBody = (req: ReturnType<typeof create<typeof TailRequestSchema>>, json: boolean) =>
    envelopeFrame(0, json ? new TextEncoder().encode(JSON.stringify(toJson(TailRequestSchema, req))) : toBinary(TailRequestSchema, req));
  /** A Tail answer's items as binary TailResponses (JSON ones re-encoded), and its end-stream JSON. */
  const tailStream = (r: { frames: Frame[] }, json: boolean) => ({
    items: r.frames
      .filter((f) => (f.flags & 0x02) === 0)
      .map((f) => (json ? toBinary(TailResponseSchema, fromJson(TailResponseSchema, JSON.parse(text(f.data)))) : f.data)),
    end: connectStream(r, json).end,
  });

  it("tail: the binary fast path and the JSON router serve the same records and end item, ending OK", async () => {
    const uid = (await host.client.create({ name: "tail" })).metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["one"] });
    await host.client.exec({ session: uid, inputs: ["two"] });
    const req = create(TailRequestSchema, { session: uid, fromSeq: 3n, follow: false });
    const fast = tailStream(await call(TAIL, "application/connect+proto", tailBody(req, false)), false);
    const routed = tailStream(await call(TAIL, "application/connect+json", tailBody(req, true)), true);
    const cases = fast.items.map((b) => fromBinary(TailResponseSchema, b).item.case);
    expect(cases).toEqual([...Array<string>(8).fill("record"), "end"]);
    expect(fromBinary(TailResponseSchema, fast.items.at(-1)!).item.value).toMatchObject({ reconnectFromSeq: 11n });
    expect(fast.items).toEqual(routed.items);
    expect(fast.end).toEqual({});
    expect(routed.end).toEqual({});
  });

  it("tail: refusals carry the router's code and words (no session, a malformed uid, from_seq past the head, a negative from_seq)", async () => {
    const uid = (await host.client.create({ name: "tail-refusals" })).metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["one"] });
    const cases = [
      create(TailRequestSchema, { session: "sess-000000000000000000000000", follow: true }),
      create(TailRequestSchema, { session: "not-a-uid", follow: true }),
      create(TailRequestSchema, { session: uid, fromSeq: 9n, follow: true }),
      create(TailRequestSchema, { session: uid, fromSeq: -2n, follow: false }),
    ];
    for (const req of cases) {
      const fast = tailStream(await call(TAIL, "application/connect+proto", tailBody(req, false)), false);
      const routed = tailStream(await call(TAIL, "application/connect+json", tailBody(req, true)), true);
      expect(fast.end?.error, req.session).toBeDefined();
      expect(fast, req.session).toEqual(routed);
    }
  });

  it("tail over gRPC-Web: the object's follower ends the answer with the trailer frame, grpc-status 0", async () => {
    const uid = (await host.client.create({ name: "tail-grpc-web" })).metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["one"] });
    const r = await call(TAIL, "application/grpc-web+proto", tailBody(create(TailRequestSchema, { session: uid, follow: false }), false), {
      "x-grpc-web": "1",
    });
    expect(r.frames.map((f) => f.flags)).toEqual([0, 0, 0, 0, 0, 0, 0x80]);
    expect(fromBinary(TailResponseSchema, r.frames[5]!.data).item.case).toBe("end");
    expect(text(r.frames[6]!.data)).toMatch(/^grpc-status: ?0\r\n$/);
  });
});
