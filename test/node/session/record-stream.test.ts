/**
 * Replay's byte stream from the session object (objects/session/record-stream.ts): its records,
 * then its ending in the caller's protocol; a journal that fails mid-answer ends it with an
 * UNAVAILABLE ending, never a silent cut.
 */
import { describe, expect, it } from "vitest";
import type { Journal, StoredColumns } from "../../../objects/journal/journal.js";
import { recordStream } from "../../../objects/session/record-stream.js";

const record = (seq: bigint): StoredColumns => ({
  seq: Number(seq),
  prevHash: seq === 1n ? "" : new Uint8Array(32).fill(0xaa),
  hash: new Uint8Array(32).fill(0xbb),
  fence: 1,
  event: Uint8Array.of(8, 3),
  eventHead: undefined,
});

/** A journal of `head` records whose reads fail from `failFrom` on. */
function journal(head: bigint, failFrom = head + 1n): Journal {
  return {
    head: () => ({ seq: head, hash: "" }),
    readColumns: (from: bigint, to: bigint, limit: number) => {
      if (from >= failFrom) throw new Error("storage gone");
      const out: StoredColumns[] = [];
      for (let s = from; s <= to && out.length < limit; s++) out.push(record(s));
      return out;
    },
  } as unknown as Journal;
}

async function frames(stream: ReadableStream<Uint8Array>): Promise<{ flags: number; body: string }[]> {
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  const out: { flags: number; body: string }[] = [];
  for (let at = 0; at < bytes.length; ) {
    const len = new DataView(bytes.buffer, at + 1, 4).getUint32(0);
    out.push({ flags: bytes[at]!, body: new TextDecoder().decode(bytes.subarray(at + 5, at + 5 + len)) });
    at += 5 + len;
  }
  return out;
}

describe("recordStream", () => {
  it("recordStream: every record, then Connect's end-stream frame (or gRPC-Web's trailers)", async () => {
    const connect = await frames(recordStream(journal(1200n), 1n, 0n, "connect"));
    expect(connect.filter((f) => f.flags === 0)).toHaveLength(1200);
    expect(connect.at(-1)).toEqual({ flags: 0x02, body: "{}" });
    const grpc = await frames(recordStream(journal(3n), 2n, 0n, "grpc-web"));
    expect(grpc.filter((f) => f.flags === 0)).toHaveLength(2);
    expect(grpc.at(-1)!.flags).toBe(0x80);
    expect(grpc.at(-1)!.body).toMatch(/^grpc-status: 0\r\n$/);
  });

  it("recordStream: a journal that fails mid-answer ends the stream UNAVAILABLE, after the records it did read", async () => {
    const f = await frames(recordStream(journal(1200n, 513n), 1n, 0n, "connect"));
    expect(f.filter((x) => x.flags === 0)).toHaveLength(512);
    const end = JSON.parse(f.at(-1)!.body) as { error: { code: string; message: string } };
    expect(f.at(-1)!.flags).toBe(0x02);
    expect(end.error.code).toBe("unavailable");
    expect(end.error.message).toContain("Replay again from the seq after the last record");
  });
});
