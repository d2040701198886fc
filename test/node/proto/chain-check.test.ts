/**
 * One set of chain rules (proto/chain-check.ts), two ways to hash: the synchronous verifier the
 * journal and CLI use (proto/verify.ts, node:crypto) and the asynchronous one the inspector UI uses
 * (WebCrypto). Both must give the same report for the same records, intact or altered.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { contentHash } from "../../../proto/canon.js";
import { type ChainRecord, verifyChainAsync, webSha256Hex } from "../../../proto/chain-check.js";
import { decodeBinary } from "../../../proto/binary-reader.js";
import { EventKind, EventSchema, LogRecordSchema, type Event, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText, userText } from "../../../proto/messages.js";
import { normalizeEvent } from "../../../proto/normalize.js";
import { rng } from "../support/random-messages.js";
import { type ChainReport, ChainVerifier, servedRecordOf, verifyChain } from "../../../proto/verify.js";

function chain(events: Event[]): ChainRecord[] {
  const out: ChainRecord[] = [];
  let prev = "";
  events.forEach((ev, i) => {
    const seq = BigInt(i + 1);
    const hash = contentHash(ev, prev, seq);
    out.push({ seq, prevHash: prev, hash, event: toBinary(EventSchema, ev) });
    prev = hash;
  });
  return out;
}

const turn = [
  create(EventSchema, { executionId: "e1", kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText("refund 120 EUR") } }),
  create(EventSchema, {
    executionId: "e1",
    kind: EventKind.EVENT_TOOL_CALL,
    body: { case: "tool", value: { id: "c1", tool: "refund", args: { amount: 120.5, currency: "EUR" }, idempotencyKey: "k" } },
  }),
  create(EventSchema, { executionId: "e1", kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: assistantText("done é\u2028") } }),
].map(normalizeEvent);

describe("chain check", () => {
  it("webSha256Hex: equals node:crypto's SHA-256 of the same UTF-8", async () => {
    const { sha256Hex } = await import("../../../proto/canon.js");
    for (const s of ["", "abc", "é\u2028😀"]) expect(await webSha256Hex(s)).toBe(sha256Hex(s));
  });

  it("verifyChainAsync: an intact chain reports the same as the synchronous verifier", async () => {
    const records = chain(turn);
    const sync = verifyChain(records);
    expect(sync).toMatchObject({ ok: true, records: 3n, firstBadSeq: 0n, headHash: records[2]!.hash });
    expect(await verifyChainAsync(records)).toEqual(sync);
    // Decoded events (as Replay serves them) verify the same way.
    const decoded = records.map((r, i) => ({ ...r, event: turn[i]! }));
    expect(await verifyChainAsync(decoded)).toEqual(sync);
  });

  it("verifyChainAsync: an altered argument, a broken link and a gap fail at the same seq as the synchronous verifier", async () => {
    const altered = chain(turn);
    const bytes = Uint8Array.from(altered[1]!.event as Uint8Array);
    const at = Buffer.from(bytes).indexOf("EUR");
    bytes[at] = "U".charCodeAt(0);
    altered[1] = { ...altered[1]!, event: bytes };
    const relinked = chain(turn);
    relinked[2] = { ...relinked[2]!, prevHash: relinked[0]!.hash };
    const gap = chain(turn).filter((r) => r.seq !== 2n);
    for (const [records, seq] of [
      [altered, 2n],
      [relinked, 3n],
      [gap, 3n],
    ] as const) {
      const sync = verifyChain(records);
      expect(sync).toMatchObject({ ok: false, firstBadSeq: seq });
      expect(await verifyChainAsync(records)).toEqual(sync);
    }
  });

  it("pushServed: Replay's encoded records verify as the decoded ones do, intact or altered at any byte", () => {
    const records = chain(turn);
    const served = records.map((r) =>
      toBinary(
        LogRecordSchema,
        create(LogRecordSchema, { seq: r.seq, prevHash: r.prevHash, contentHash: r.hash, fence: 3n, event: decodeBinary(EventSchema, r.event as Uint8Array) }),
      ),
    );
    const report = (encoded: Uint8Array[]) => {
      const v = new ChainVerifier();
      for (const e of encoded) v.pushServed(servedRecordOf(e));
      return v.report();
    };
    expect(report(served)).toEqual(verifyChain(records));
    // Every byte of the second record's event changed: the verdict is the decoded form's, or the record does not decode at all.
    const event = servedRecordOf(served[1]!).event;
    const start = event.byteOffset - served[1]!.byteOffset;
    let tampered = 0;
    for (let i = start; i < start + event.length; i++) {
      const bytes = Uint8Array.from(served[1]!);
      bytes[i] = bytes[i]! ^ 0x01;
      let decoded: LogRecord;
      try {
        decoded = decodeBinary(LogRecordSchema, bytes);
      } catch {
        // The record's own fields, or its event, do not decode: refused, or failed at its seq.
        let verdict: ChainReport | "refused";
        try {
          verdict = report([served[0]!, bytes, served[2]!]);
        } catch {
          verdict = "refused";
        }
        if (verdict !== "refused") expect(verdict, `byte ${i}`).toMatchObject({ ok: false, firstBadSeq: 2n });
        tampered++;
        continue;
      }
      const expected = verifyChain([
        records[0]!,
        { seq: decoded.seq, prevHash: decoded.prevHash, hash: decoded.contentHash, event: decoded.event ?? create(EventSchema) },
        records[2]!,
      ]);
      const got = report([served[0]!, bytes, served[2]!]);
      expect(got, `byte ${i}`).toEqual(expected);
      if (!got.ok) tampered++;
    }
    expect(tampered).toBeGreaterThan(event.length / 2);
  });

  it("servedRecordOf: a record in another form than the plain one is read as the decoder reads it", () => {
    const [first] = chain(turn);
    const plain = toBinary(LogRecordSchema, create(LogRecordSchema, { seq: 9n, prevHash: first!.prevHash, contentHash: first!.hash, event: turn[0] }));
    // seq sent again (last wins), then an unknown field: the decoder's record.
    const odd = Uint8Array.from([...plain, 0x08, 0x01, 0xa8, 0x1f, 0x07]);
    const r = servedRecordOf(odd);
    expect(r.seq).toBe(1n);
    expect(r.event).toEqual(first!.event);
    expect(verifyChain([first!])).toMatchObject({ ok: true });
    const v = new ChainVerifier();
    v.pushServed(r);
    expect(v.report()).toEqual(verifyChain([first!]));
    // No event: hashed as the empty event.
    expect(servedRecordOf(toBinary(LogRecordSchema, create(LogRecordSchema, { seq: 1n }))).event).toEqual(new Uint8Array(0));
  });

  it("verifyChainAsync: hashes computed many at a time, finishing in any order, give the synchronous verdict on chains with faults anywhere", async () => {
    const r = rng(2026);
    const events = Array.from({ length: 700 }, (_, i) =>
      normalizeEvent(create(EventSchema, { executionId: "e1", kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText(`m${i}`) } })),
    );
    const intact = chain(events);
    // Each digest resolves after a random delay, so later records' hashes arrive before earlier ones.
    const shuffled = async (text: string) => {
      await new Promise((ok) => setTimeout(ok, r.int(3)));
      return webSha256Hex(text);
    };
    const faults: ((c: ChainRecord[], at: number) => void)[] = [
      (c, at) => (c[at] = { ...c[at]!, hash: "0".repeat(64) }),
      (c, at) => (c[at] = { ...c[at]!, prevHash: c[0]!.hash }),
      (c, at) => c.splice(at, 1),
      (c, at) => {
        const bytes = Uint8Array.from(c[at]!.event as Uint8Array);
        bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
        c[at] = { ...c[at]!, event: bytes };
      },
    ];
    for (let round = 0; round < 12; round++) {
      const records = [...intact];
      // One or two faults; with two, the earlier must be the one reported even when the later is found first.
      const at = [r.int(600), r.int(690)].sort((a, b) => b - a).slice(0, 1 + (round % 2));
      for (const i of at) r.pick(faults)(records, i);
      const sync = verifyChain(records);
      expect(sync.ok, `round ${round}`).toBe(false);
      expect(await verifyChainAsync(records, shuffled), `round ${round}`).toEqual(sync);
    }
    expect(await verifyChainAsync(intact, shuffled)).toEqual(verifyChain(intact));
  });
});
