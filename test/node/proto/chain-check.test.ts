/**
 * One set of chain rules (proto/chain-check.ts), two ways to hash: the synchronous verifier the
 * journal and CLI use (proto/verify.ts, node:crypto) and the asynchronous one the inspector UI uses
 * (WebCrypto). Both must give the same report for the same records, intact or altered.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { contentHash } from "../../../proto/canon.js";
import { type ChainRecord, verifyChainAsync, webSha256Hex } from "../../../proto/chain-check.js";
import { EventKind, EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText, userText } from "../../../proto/messages.js";
import { normalizeEvent } from "../../../proto/normalize.js";
import { verifyChain } from "../../../proto/verify.js";

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
});
