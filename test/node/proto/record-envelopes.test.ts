/** proto/record-envelopes.ts: each envelope holds exactly what toBinary gives the decoded LogRecord. */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema, LogRecordSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { userText } from "../../../proto/messages.js";
import {
  connectEndFrame,
  deltaUpdateEnvelope,
  EnvelopeWriter,
  grpcWebTrailerFrame,
  listSessionsResponseBytes,
  recordUpdateEnvelope,
  streamEnd,
  tailDeltaEnvelope,
} from "../../../proto/record-envelopes.js";
import { TailResponseSchema } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { ExecUpdateSchema, ListSessionsResponseSchema, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";

/**
 * Records of every size: seq, prev_hash, fence, and the length of the event's text (0: no body).
 * Seqs and fences cross varint byte boundaries and 2^53; the first is the genesis link; the last
 * one's text is `lastTextLen` long.
 */
function recordCases(lastTextLen: number): [bigint, string, bigint, number][] {
  return [
    [1n, "", 1n, 0],
    [127n, "a".repeat(64), 0n, 10],
    [128n, "b".repeat(64), 300n, 200],
    [16384n, "c".repeat(64), 2n ** 31n, 70_000],
    [2n ** 40n, "d".repeat(64), 2n ** 53n + 1n, lastTextLen],
  ];
}

/** An INPUT event with a user text of `textLen` characters, or no body at all for 0. */
function eventOf(textLen: number) {
  return create(EventSchema, {
    executionId: "e",
    kind: 3,
    body: textLen ? { case: "message", value: userText("x".repeat(textLen)) } : { case: undefined },
  });
}

/** `got` is one data envelope (flags 0, its length, then the bytes) holding exactly `want`. */
function expectDataEnvelope(got: Uint8Array, want: Uint8Array): void {
  expect(got[0]).toBe(0);
  expect(new DataView(got.buffer, got.byteOffset + 1, 4).getUint32(0)).toBe(want.length);
  expect(got.subarray(5)).toEqual(want);
  expect(got.length).toBe(5 + want.length);
}

describe("record envelopes", () => {
  it("EnvelopeWriter: seqs and fences of every size, genesis and later links, empty and large events encode like toBinary", () => {
    const w = new EnvelopeWriter();
    const expected: Uint8Array[] = [];
    for (const [seq, prevHash, fence, textLen] of recordCases(5)) {
      const event = eventOf(textLen);
      const eventBytes = toBinary(EventSchema, event);
      w.pushRecord({ seq, prevHash, hash: "f".repeat(64), fence, event: eventBytes });
      expected.push(toBinary(LogRecordSchema, create(LogRecordSchema, { seq, prevHash, contentHash: "f".repeat(64), fence, event })));
    }
    const bytes = w.take();
    let at = 0;
    for (const want of expected) {
      expect(bytes[at]).toBe(0);
      const len = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
      const got = bytes.subarray(at + 5, at + 5 + len);
      expect(got).toEqual(want);
      fromBinary(LogRecordSchema, got);
      at += 5 + len;
    }
    expect(at).toBe(bytes.length);
    expect(w.length).toBe(0);
  });

  it("recordUpdateEnvelope: one record as an enveloped ExecUpdate, exactly what toBinary gives it, for every size of record", () => {
    for (const [seq, prevHash, fence, textLen] of recordCases(2_100_000)) {
      const event = eventOf(textLen);
      const record = create(LogRecordSchema, { seq, prevHash, contentHash: "f".repeat(64), fence, event });
      const want = toBinary(ExecUpdateSchema, create(ExecUpdateSchema, { update: { case: "record", value: record } }));
      const got = recordUpdateEnvelope({ seq, prevHash, hash: "f".repeat(64), fence, event: toBinary(EventSchema, event) });
      expectDataEnvelope(got, want);
    }
    // A short row's two parts write what the whole event writes.
    const whole = toBinary(EventSchema, create(EventSchema, { executionId: "exec-1", kind: 3, body: { case: "message", value: userText("hi") } }));
    const parts = { seq: 9n, prevHash: "a".repeat(64), hash: "b".repeat(64), fence: 2n };
    expect(recordUpdateEnvelope({ ...parts, eventHead: whole.subarray(0, 9), event: whole.subarray(9) })).toEqual(
      recordUpdateEnvelope({ ...parts, event: whole }),
    );
  });

  it("EnvelopeWriter: hashes as their 32 bytes and seqs as numbers write what their hex text and bigints write", () => {
    const event = toBinary(EventSchema, create(EventSchema, { executionId: "e", kind: 3, body: { case: "message", value: userText("hi") } }));
    const prev = new Uint8Array(32).map((_, i) => (i * 37 + 11) & 0xff);
    const hash = new Uint8Array(32).map((_, i) => 255 - i);
    const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
    for (const [seq, fence] of [
      [1, 0],
      [2 ** 40, 2 ** 33],
    ] as const) {
      const text = new EnvelopeWriter(16);
      text.pushRecord({ seq: BigInt(seq), prevHash: seq === 1 ? "" : hex(prev), hash: hex(hash), fence: BigInt(fence), event });
      const bytes = new EnvelopeWriter(16);
      bytes.pushRecord({ seq, prevHash: seq === 1 ? "" : prev, hash, fence, event });
      expect(bytes.take()).toEqual(text.take());
    }
  });

  it("EnvelopeWriter: an event in two parts (a short row's lent id field, then the rest) writes what the whole event writes", () => {
    for (const textLen of [0, 100, 200]) {
      const event = toBinary(
        EventSchema,
        create(EventSchema, {
          executionId: "0123456789abcdef",
          kind: 3,
          body: textLen ? { case: "message", value: userText("y".repeat(textLen)) } : { case: undefined },
        }),
      );
      const record = { seq: 7, prevHash: "a".repeat(64), hash: "b".repeat(64), fence: 2 };
      const whole = new EnvelopeWriter(16);
      whole.pushRecord({ ...record, event });
      const parts = new EnvelopeWriter(16);
      parts.pushRecord({ ...record, eventHead: event.subarray(0, 18), event: event.subarray(18) });
      expect(parts.take()).toEqual(whole.take());
    }
  });

  it("deltaUpdateEnvelope: a streamed chunk as an enveloped ExecUpdate, exactly what toBinary gives it, for texts of every length and kind", () => {
    // Lengths across varint byte boundaries (127/128 bytes, 16383/16384), multi-byte characters,
    // lone surrogates (U+FFFD in their place, as toBinary writes them), empty parts and the done flag.
    const random = (n: number, seed: number) => {
      let x = seed;
      let out = "";
      for (let i = 0; i < n; i++) {
        x = (x * 1103515245 + 12345) & 0x7fffffff;
        const pick = x % 7;
        out +=
          pick === 0
            ? String.fromCharCode(0xd800 + (x % 0x800))
            : pick === 1
              ? "é"
              : pick === 2
                ? "😀"
                : pick === 3
                  ? "中"
                  : String.fromCharCode(32 + (x % 90));
      }
      return out;
    };
    const cases: [string, string, boolean][] = [
      ["", "", false],
      ["", "", true],
      ["exec-1", "", true],
      ["", "hi", false],
      ["0123456789abcdef", "a".repeat(127), false],
      ["0123456789abcdef", "a".repeat(128), true],
      ["0123456789abcdef", "b".repeat(16383), false],
      ["0123456789abcdef", "é".repeat(8192), false],
      ["0123456789abcdef", "c".repeat(70_000), true],
      ["0123456789abcdef", "\ud83d", false],
      ["id-\udc00", "x\ud83dy", true],
    ];
    for (let seed = 1; seed <= 200; seed++) cases.push([random(seed % 20, seed), random((seed * 7) % 300, seed + 1), seed % 2 === 0]);
    for (const [executionId, chunk, done] of cases) {
      const want = toBinary(ExecUpdateSchema, create(ExecUpdateSchema, { update: { case: "delta", value: { executionId, chunk, done } } }));
      const got = deltaUpdateEnvelope(executionId, chunk, done);
      expectDataEnvelope(got, want);
    }
  });

  it("a record's envelope is also its TailResponse item byte for byte (both carry the record as field 1)", () => {
    for (const [seq, prevHash, fence, textLen] of recordCases(3000)) {
      const event = eventOf(textLen);
      const record = create(LogRecordSchema, { seq, prevHash, contentHash: "f".repeat(64), fence, event });
      const want = toBinary(TailResponseSchema, create(TailResponseSchema, { item: { case: "record", value: record } }));
      const got = recordUpdateEnvelope({ seq, prevHash, hash: "f".repeat(64), fence, event: toBinary(EventSchema, event) });
      expect(got.subarray(5)).toEqual(want);
    }
  });

  it("tailDeltaEnvelope: a follower's streamed chunk, exactly what toBinary gives the TailResponse, for every seq, offset and text", () => {
    const texts = ["", "hi", "a".repeat(127), "b".repeat(128), "é".repeat(9000), "x\ud83dy", "😀中"];
    const numbers = [0n, 1n, 127n, 128n, 16384n, 2n ** 40n, 2n ** 53n + 7n];
    for (const afterSeq of numbers) {
      for (const offset of numbers) {
        for (const [i, chunk] of texts.entries()) {
          const executionId = i % 2 ? "0123456789abcdef" : "";
          const done = i % 3 === 0;
          const want = toBinary(
            TailResponseSchema,
            create(TailResponseSchema, { item: { case: "delta", value: { afterSeq, executionId, offset, chunk, done } } }),
          );
          const got = tailDeltaEnvelope(afterSeq, executionId, offset, chunk, done);
          expectDataEnvelope(got, want);
        }
      }
    }
  });

  it("listSessionsResponseBytes: a page of encoded Sessions and its token, exactly what toBinary gives the decoded page", () => {
    const session = (i: number) =>
      create(SessionSchema, {
        metadata: { uid: `sess-${String(i).padStart(24, "0")}`, project: "p", name: "n".repeat(i * 7) },
        harness: "echo",
        lastSeq: BigInt(i) * 1000n,
        labels: i % 2 ? { team: "a", ü: "ß" } : {},
      });
    // Sessions of every length around the one-byte varint's edge, pages of 0, 1 and 40, tokens empty, ASCII and not.
    for (const count of [0, 1, 2, 40]) {
      for (const token of ["", "abc", "tok-é-😀".repeat(30)]) {
        const sessions = Array.from({ length: count }, (_, i) => session(i));
        const bytes = listSessionsResponseBytes(
          sessions.map((s) => toBinary(SessionSchema, s)),
          token,
        );
        expect(bytes).toEqual(toBinary(ListSessionsResponseSchema, create(ListSessionsResponseSchema, { sessions, nextPageToken: token })));
      }
    }
    expect(toBinary(SessionSchema, session(39)).length).toBeGreaterThan(127);
  });

  it("streamEnd: the OK ending of each protocol, a fresh copy each time; an error's ending carries its code and message", () => {
    const connectOk = streamEnd("connect");
    expect([...connectOk]).toEqual([2, 0, 0, 0, 2, 0x7b, 0x7d]);
    expect(streamEnd("grpc-web")).toEqual(grpcWebTrailerFrame(0));
    connectOk.fill(9);
    expect(streamEnd("connect")).toEqual(connectEndFrame());
    const failed = streamEnd("connect", { code: 14, message: "retry" });
    expect(new TextDecoder().decode(failed.subarray(5))).toBe('{"error":{"code":"unavailable","message":"retry"}}');
    expect(new TextDecoder().decode(streamEnd("grpc-web", { code: 14, message: "retry now" }).subarray(5))).toBe(
      "grpc-status: 14\r\ngrpc-message: retry%20now\r\n",
    );
  });
});
