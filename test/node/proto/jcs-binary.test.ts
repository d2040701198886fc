/**
 * The JCS writer that reads binary (proto/jcs-binary.ts) against decoding first: whenever it
 * answers, its text is what decodeBinary + canonicalJsonOf give, byte for byte, on thousands of
 * random messages, on two encodings concatenated (merge rules), and on mutated and truncated
 * bytes; when the decoder or the writer refuses, it does not answer. And it answers, without the
 * decoder, for the events a host writes on every turn.
 */
import { create, type DescMessage, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { decodeBinary } from "../../../proto/binary-reader.js";
import { encodeBinary } from "../../../proto/binary-writer.js";
import { EventKind, EventSchema, LogRecordSchema, ModelCallSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecUpdateSchema, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { canonicalJsonOf } from "../../../proto/jcs-writer.js";
import { canonicalJsonOfBinary } from "../../../proto/jcs-binary.js";
import { encodeRandom, mutate, orRefused, rng } from "../support/random-messages.js";

const REFUSED = "<refused>";

/** The reference's text (or REFUSED), and the binary writer's (undefined when it leaves the bytes to the decoder). */
function both(desc: DescMessage, bytes: Uint8Array): { fast: string | undefined; ref: string } {
  return { fast: canonicalJsonOfBinary(desc, bytes), ref: orRefused(() => canonicalJsonOf(desc, decodeBinary(desc, bytes))) };
}

/** The property: an answer is the reference's text; a refusal is never answered. */
function agrees(desc: DescMessage, bytes: Uint8Array, label: string): boolean {
  const { fast, ref } = both(desc, bytes);
  if (fast !== undefined) expect(fast, label).toBe(ref);
  return fast !== undefined;
}

const SCHEMAS: [string, DescMessage][] = [
  ["Event", EventSchema],
  ["ModelCall", ModelCallSchema],
  ["LogRecord", LogRecordSchema],
  ["Session", SessionSchema],
  ["ExecUpdate", ExecUpdateSchema],
];

describe("canonicalJsonOfBinary against decodeBinary + canonicalJsonOf", () => {
  it.each(SCHEMAS)("canonicalJsonOfBinary: 2000 random %s encodings give the reference's text whenever it answers", (_n, desc) => {
    const r = rng(desc.typeName.length * 17 + 11);
    let compared = 0;
    let answered = 0;
    for (let i = 0; i < 2000; i++) {
      const b = encodeRandom(desc, r);
      if (!b) continue;
      compared++;
      if (agrees(desc, b, `case ${i}`)) answered++;
    }
    expect(compared).toBeGreaterThan(1500);
    // Random messages are full of Structs and wrappers, which it leaves to the decoder; still, most are answered.
    expect(answered).toBeGreaterThan(compared / 2);
  });

  it.each(SCHEMAS)("canonicalJsonOfBinary: two %s encodings concatenated are answered only as the merge reads them", (_n, desc) => {
    const r = rng(desc.typeName.length * 5 + 2);
    for (let i = 0; i < 800; i++) {
      const a = encodeRandom(desc, r);
      const b = encodeRandom(desc, r);
      if (a && b) agrees(desc, Uint8Array.from([...a, ...b]), `case ${i}`);
    }
  });

  it.each(SCHEMAS)("canonicalJsonOfBinary: mutated and truncated %s bytes get the reference's text or no answer", (_n, desc) => {
    const r = rng(desc.typeName.length * 29 + 7);
    let refused = 0;
    for (let i = 0; i < 2000; i++) {
      const b = encodeRandom(desc, r);
      if (!b) continue;
      const m = mutate(r, b);
      agrees(desc, m, `case ${i}`);
      if (both(desc, m).ref === REFUSED) refused++;
    }
    expect(refused).toBeGreaterThan(10);
  });

  it("canonicalJsonOfBinary: the events of a turn are written without the decoder", () => {
    const ts = timestampFromMs(Date.UTC(2026, 11, 2, 3, 4, 5, 678));
    const events: Event[] = [
      create(EventSchema, {
        executionId: "e1",
        ts,
        kind: EventKind.EVENT_EXECUTION_START,
        schemaVersion: 1,
        body: { case: "executionStart", value: { config: Uint8Array.of(1, 2, 250), inputCount: 0n, harness: "chat" } },
      }),
      create(EventSchema, {
        executionId: "e1",
        ts,
        kind: EventKind.EVENT_INPUT,
        body: { case: "message", value: { role: "user", parts: [{ part: { case: "text", value: { text: 'hé \u2028 "quoted"' } } }] } },
        actor: { principal: "u:alice", issuer: "https://id.example" },
      }),
      create(EventSchema, {
        executionId: "e1",
        ts,
        kind: EventKind.EVENT_MODEL_CALL,
        body: { case: "model", value: { model: "echo", params: { temperature: "0", b: "x", a: "" }, inputHash: "ab".repeat(32) } },
      }),
      create(EventSchema, { executionId: "e1", ts, kind: EventKind.EVENT_USAGE, body: { case: "usage", value: { inputTokens: 12n, outputTokens: 0n } } }),
      create(EventSchema, { executionId: "e1", ts, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "completed" } } }),
      create(EventSchema),
    ];
    for (const [i, ev] of events.entries()) {
      const bytes = encodeBinary(EventSchema, ev);
      const fast = canonicalJsonOfBinary(EventSchema, bytes);
      expect(fast, `event ${i}`).toBe(canonicalJsonOf(EventSchema, ev));
      expect(fast, `event ${i}`).toBe(canonicalJsonOf(EventSchema, decodeBinary(EventSchema, bytes)));
      expect(toBinary(EventSchema, ev), `event ${i}`).toEqual(bytes);
    }
  });

  it("canonicalJsonOfBinary: a field sent twice, or two members of one oneof, are left to the decoder", () => {
    const one = encodeBinary(EventSchema, create(EventSchema, { executionId: "a" }));
    const other = encodeBinary(EventSchema, create(EventSchema, { executionId: "b" }));
    expect(canonicalJsonOfBinary(EventSchema, Uint8Array.from([...one, ...other]))).toBeUndefined();
    const message = encodeBinary(EventSchema, create(EventSchema, { body: { case: "message", value: {} } }));
    const usage = encodeBinary(EventSchema, create(EventSchema, { body: { case: "usage", value: {} } }));
    expect(canonicalJsonOfBinary(EventSchema, Uint8Array.from([...message, ...usage]))).toBeUndefined();
    // Each alone is answered.
    expect(canonicalJsonOfBinary(EventSchema, message)).toBe('{"message":{}}');
    expect(canonicalJsonOfBinary(EventSchema, usage)).toBe('{"usage":{}}');
  });
});
