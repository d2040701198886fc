/**
 * SessionsClient.replay reads a binary Replay off the wire (sdk/replay-stream.ts): against the
 * shared wrangler dev, its records, its errors and its cancellation must be connect-es's own
 * (client.raw.replay, the reference), for whole journals, ranges and refusals.
 */
import { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, inject, it } from "vitest";
import { LogRecordSchema, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { SessionsClient } from "../../../sdk/client.js";

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
