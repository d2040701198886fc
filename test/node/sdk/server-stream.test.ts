/**
 * SessionsClient.replay, exec and tail read binary streams off the wire (sdk/server-stream.ts):
 * against the shared wrangler dev, their messages, errors and cancellation must be connect-es's own
 * (client.raw.replay, client.raw.exec and client.rawTail.tail, the reference), for whole journals,
 * ranges, turns, follows and refusals; against a stand-in server, a stream cut short is
 * UNAVAILABLE, and a follow cut short reconnects from the seq after its last record.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, inject, it } from "vitest";
import { EventKind, LogRecordSchema, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecRequestSchema, type ExecUpdate, ExecUpdateSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { SessionsClient } from "../../../sdk/client.js";
import { execUpdates, tailResponses } from "../../../sdk/server-stream.js";
import { TailEnd_Reason, TailRequestSchema, type TailResponse, TailResponseSchema } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";

const client = new SessionsClient({ server: inject("serverUrl") });

async function collect(it: AsyncIterable<LogRecord>): Promise<{ records: string[]; error?: { code: Code; message: string } }> {
  const records: string[] = [];
  try {
    for await (const r of it) records.push(Buffer.from(toBinary(LogRecordSchema, r)).toString("hex"));
    return { records };
  } catch (e) {
    const err = ConnectError.from(e);
    return { records, error: { code: err.code, message: err.rawMessage } };
  }
}

describe("replay off the wire", () => {
  it("replay: whole journals and ranges give connect-es's records, byte for byte", async () => {
    const uid = (await client.create({ name: "wire-replay" })).metadata!.uid;
    // Long inputs, so the host's answer spans many chunks and envelopes straddle them.
    for (let i = 0; i < 12; i++) await client.exec({ session: uid, inputs: Array.from({ length: 20 }, (_, k) => `${i}.${k} `.padEnd(900, "y")) });
    for (const [from, to] of [
      [0n, 0n],
      [1n, 1n],
      [7n, 0n],
      [100n, 180n],
      [260n, 0n],
    ] as const) {
      const wire = await collect(client.replay(uid, { from, to }));
      const reference = await collect(client.raw.replay({ session: uid, fromSeq: from, toSeq: to }));
      expect(wire.error).toBeUndefined();
      expect(wire.records.length, `from ${from} to ${to}`).toBe(reference.records.length);
      expect(wire.records).toEqual(reference.records);
    }
    expect((await collect(client.replay(uid))).records).toHaveLength(12 * 24);
  });

  it("replay: refusals carry connect-es's code and message (unknown session, malformed uid, negative seq)", async () => {
    for (const [session, from] of [
      ["sess-000000000000", 0n],
      ["", 0n],
      ["not a uid", 0n],
      [(await client.create({ name: "neg" })).metadata!.uid, -4n],
    ] as const) {
      const wire = await collect(client.replay(session, { from }));
      const reference = await collect(client.raw.replay({ session, fromSeq: from, toSeq: 0n }));
      expect(wire.error, session).toBeDefined();
      expect(wire).toEqual(reference);
    }
  });

  it("replay: an aborted signal ends the read as CANCELED, as connect-es does", async () => {
    const uid = (await client.create({ name: "abort" })).metadata!.uid;
    await client.exec({ session: uid, inputs: ["x"] });
    const ac = new AbortController();
    ac.abort();
    const wire = await collect(client.replay(uid, { signal: ac.signal }));
    const reference = await collect(client.raw.replay({ session: uid, fromSeq: 0n, toSeq: 0n }, { signal: ac.signal }));
    expect(wire.error?.code).toBe(Code.Canceled);
    expect(reference.error?.code).toBe(Code.Canceled);
  });
});

/** An Exec stream as comparable text: each update's case, and a record's kind (times and ids differ between turns). */
async function shape(it: AsyncIterable<ExecUpdate>): Promise<{ updates: string[]; error?: { code: Code; message: string } }> {
  const updates: string[] = [];
  try {
    for await (const u of it) updates.push(u.update.case === "record" ? `record:${EventKind[u.update.value.event!.kind]}` : `${u.update.case}`);
    return { updates };
  } catch (e) {
    const err = ConnectError.from(e);
    return { updates, error: { code: err.code, message: err.rawMessage } };
  }
}

describe("exec off the wire", () => {
  const wire = { baseUrl: inject("serverUrl"), fetch: (i: RequestInfo | URL, init?: RequestInit) => fetch(i, init) };
  const request = (session: string, inputs: string[], more: { expectedLastSeq?: bigint; harness?: string } = {}) =>
    create(ExecRequestSchema, { session, inputs: inputs.map(userText), ...more });

  it("exec: a turn streams what connect-es streams, and its records are the journal's, byte for byte", async () => {
    const a = (await client.create({ name: "wire-exec-a" })).metadata!.uid;
    const b = (await client.create({ name: "wire-exec-b" })).metadata!.uid;
    const records: string[] = [];
    const mine = await shape(
      (async function* () {
        for await (const u of execUpdates(wire, request(a, ["one", "two"]))) {
          if (u.update.case === "record") records.push(Buffer.from(toBinary(LogRecordSchema, u.update.value)).toString("hex"));
          yield u;
        }
      })(),
    );
    const reference = await shape(client.raw.exec(request(b, ["one", "two"])));
    expect(mine.error).toBeUndefined();
    expect(mine.updates).toEqual(reference.updates);
    expect(mine.updates[0]).toBe("session");
    expect(mine.updates).toContain("record:EVENT_END");
    expect(records).toEqual((await collect(client.replay(a))).records);
    // The SDK's exec goes this way: its outputs and cursor.
    const t = await client.exec({ session: a, inputs: ["three"] });
    expect(t.outputs).toEqual(["echo:three"]);
    expect(t.cursor).toBe(BigInt(records.length) + 5n);
  });

  it("exec: refusals carry connect-es's code and message (unknown session, stale CAS, unknown harness, malformed uid)", async () => {
    const uid = (await client.create({ name: "wire-exec-refusals" })).metadata!.uid;
    await client.exec({ session: uid, inputs: ["x"] });
    for (const req of [
      request("sess-000000000000000000000000", ["x"]),
      request(uid, ["x"], { expectedLastSeq: 1n }),
      request(uid, ["x"], { harness: "no-such-harness" }),
      request("not a uid", ["x"]),
    ]) {
      const mine = await shape(execUpdates(wire, req));
      const reference = await shape(client.raw.exec(req));
      expect(mine.error, JSON.stringify(req.session)).toBeDefined();
      expect(mine).toEqual(reference);
    }
  });

  it("exec: an aborted signal ends the turn's stream as CANCELED, as connect-es does", async () => {
    const uid = (await client.create({ name: "wire-exec-abort" })).metadata!.uid;
    const ac = new AbortController();
    ac.abort();
    expect((await shape(execUpdates(wire, request(uid, ["x"]), ac.signal))).error?.code).toBe(Code.Canceled);
    expect((await shape(client.raw.exec(request(uid, ["x"]), { signal: ac.signal }))).error?.code).toBe(Code.Canceled);
  });

  it("exec and replay: an answer that is not a stream (a proxy's 503, a 404) gets connect-es's code and message", async () => {
    const server = createServer((req, res) => {
      req.resume();
      const status = req.url!.endsWith("/Exec") ? 503 : 404;
      res.writeHead(status, { "content-type": "text/plain" });
      res.end("Your worker restarted mid-request. Please try sending the request again.");
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const standIn = new SessionsClient({ server: baseUrl });
      const exec = await shape(execUpdates({ baseUrl, fetch: (i, init) => fetch(i, init) }, request("sess-000000000000000000000000", ["x"])));
      expect(exec.error).toEqual({ code: Code.Unavailable, message: "HTTP 503" });
      expect(exec).toEqual(await shape(standIn.raw.exec(request("sess-000000000000000000000000", ["x"]))));
      const replay = await collect(standIn.replay("sess-000000000000000000000000"));
      expect(replay.error).toEqual({ code: Code.Unimplemented, message: "HTTP 404" });
      expect(replay).toEqual(await collect(standIn.raw.replay({ session: "sess-000000000000000000000000", fromSeq: 0n, toSeq: 0n })));
    } finally {
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  });

  it("exec: a stream that ends without its end frame is UNAVAILABLE, after the messages that did arrive", async () => {
    const update = toBinary(ExecUpdateSchema, create(ExecUpdateSchema, { update: { case: "session", value: { lastSeq: 3n } } }));
    const envelope = Buffer.alloc(5 + update.length);
    envelope.writeUInt32BE(update.length, 1);
    envelope.set(update, 5);
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/connect+proto" });
      // Split mid-envelope, then the connection ends: no end-stream frame.
      res.write(envelope.subarray(0, 3));
      setTimeout(() => res.end(envelope.subarray(3)), 5);
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    try {
      const cut = {
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        fetch: (i: RequestInfo | URL, init?: RequestInit) => fetch(i, init),
      };
      const got = await shape(execUpdates(cut, request("sess-000000000000000000000000", ["x"])));
      expect(got.updates).toEqual(["session"]);
      expect(got.error?.code).toBe(Code.Unavailable);
      expect(got.error?.message).toMatch(/ended without its end frame/);
    } finally {
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  });
});

/** A Tail stream's items as hex of their binary form, and the error it ended with. */
async function items(it: AsyncIterable<TailResponse>): Promise<{ items: string[]; error?: { code: Code; message: string } }> {
  const out: string[] = [];
  try {
    for await (const r of it) out.push(Buffer.from(toBinary(TailResponseSchema, r)).toString("hex"));
    return { items: out };
  } catch (e) {
    const err = ConnectError.from(e);
    return { items: out, error: { code: err.code, message: err.rawMessage } };
  }
}

describe("tail off the wire", () => {
  const wire = { baseUrl: inject("serverUrl"), fetch: (i: RequestInfo | URL, init?: RequestInit) => fetch(i, init) };

  it("tail: a follow to the head gives connect-es's items, byte for byte, and SessionsClient.tail the journal's records", async () => {
    const uid = (await client.create({ name: "wire-tail" })).metadata!.uid;
    // Long inputs, so the answer spans chunks and envelopes straddle them.
    for (let i = 0; i < 6; i++) await client.exec({ session: uid, inputs: Array.from({ length: 10 }, (_, k) => `${i}.${k} `.padEnd(2000, "t")) });
    for (const fromSeq of [1n, 40n, 85n]) {
      const mine = await items(tailResponses(wire, { session: uid, fromSeq, follow: false }));
      const reference = await items(client.rawTail.tail({ session: uid, fromSeq, follow: false }));
      expect(mine.error).toBeUndefined();
      expect(mine.items.length, `from ${fromSeq}`).toBe(reference.items.length);
      expect(mine.items).toEqual(reference.items);
    }
    const records: string[] = [];
    for await (const ev of client.tail(uid, { follow: false }))
      if (ev.kind === "record") records.push(Buffer.from(toBinary(LogRecordSchema, ev.record)).toString("hex"));
    expect(records).toEqual((await collect(client.replay(uid))).records);
  });

  it("tail: refusals carry connect-es's code and message (unknown session, malformed uid, past the head)", async () => {
    const uid = (await client.create({ name: "wire-tail-refusals" })).metadata!.uid;
    await client.exec({ session: uid, inputs: ["x"] });
    for (const [session, fromSeq] of [
      ["sess-000000000000000000000000", 1n],
      ["not a uid", 1n],
      [uid, 50n],
    ] as const) {
      const mine = await items(tailResponses(wire, { session, fromSeq, follow: true }));
      const reference = await items(client.rawTail.tail({ session, fromSeq, follow: true }));
      expect(mine.error, session).toBeDefined();
      expect(mine).toEqual(reference);
    }
  });

  it("tail: a follow cut short reconnects from the seq after its last record, and delivers each record once", async () => {
    const uid = "sess-000000000000000000000001";
    const envelope = (r: TailResponse) => {
      const b = toBinary(TailResponseSchema, r);
      const e = Buffer.alloc(5 + b.length);
      e.writeUInt32BE(b.length, 1);
      e.set(b, 5);
      return e;
    };
    const record = (seq: bigint) => create(TailResponseSchema, { item: { case: "record", value: { seq } } });
    const asked: bigint[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const from = fromTail(body.subarray(5));
        asked.push(from);
        res.writeHead(200, { "content-type": "application/connect+proto" });
        if (asked.length === 1) {
          // Two records, the third cut mid-envelope, and no end: an object that went away.
          const third = envelope(record(3n));
          res.end(Buffer.concat([envelope(record(1n)), envelope(record(2n)), third.subarray(0, 4)]));
          return;
        }
        const end = create(TailResponseSchema, { item: { case: "end", value: { reason: TailEnd_Reason.HEAD, reconnectFromSeq: 5n } } });
        res.end(Buffer.concat([envelope(record(from)), envelope(record(from + 1n)), envelope(end), Buffer.from([2, 0, 0, 0, 2]), Buffer.from("{}")]));
      });
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    try {
      const standIn = new SessionsClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      const seen: bigint[] = [];
      const reconnects: string[] = [];
      for await (const ev of standIn.tail(uid, { follow: false, backoffMs: 1, onReconnect: (from, why) => reconnects.push(`${from} ${why}`) })) {
        if (ev.kind === "record") seen.push(ev.record.seq);
      }
      expect(seen).toEqual([1n, 2n, 3n, 4n]);
      expect(asked).toEqual([1n, 3n]);
      expect(reconnects).toEqual(["3 Unavailable: the Tail stream ended without its end frame: Tail again from the seq after the last record received"]);
    } finally {
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  });
});

/** The from_seq of a binary TailRequest. */
function fromTail(message: Uint8Array): bigint {
  return fromBinary(TailRequestSchema, message).fromSeq;
}
