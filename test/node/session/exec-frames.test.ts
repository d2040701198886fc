/**
 * objects/exec-frames.ts in process: the Exec stream's frames reassembled from chunks split at
 * every byte, and relayed as Connect envelopes without being re-framed (the Worker's Exec route,
 * worker/exec-stream-route.ts, forwards `relay`'s bytes as the response body).
 */
import { describe, expect, it } from "vitest";
import { encodeFailureFrame, encodeUpdateFrame, FrameDecoder } from "../../../objects/exec-frames.js";
import { concatBytes } from "../../../proto/bytes.js";
import { envelopeFrame } from "../../../proto/record-envelopes.js";

const payloads = [new Uint8Array([]), new Uint8Array([1, 2, 3]), new Uint8Array(300).map((_, i) => i & 0xff), new Uint8Array([9])];
const updates = concatBytes(payloads.map(encodeUpdateFrame));
const failure = encodeFailureFrame({ ok: false, reason: "session_busy", message: "a turn is running" });

/** `bytes` cut into pieces at the given offsets. */
function cut(bytes: Uint8Array, at: number[]): Uint8Array[] {
  const edges = [0, ...at, bytes.length];
  return edges.slice(1).map((end, i) => bytes.slice(edges[i], end));
}

describe("FrameDecoder", () => {
  it("push: every split of the stream into two chunks gives the same frames", () => {
    for (let at = 0; at <= updates.length; at++) {
      const dec = new FrameDecoder();
      const frames = cut(updates, [at]).flatMap((c) => dec.push(c));
      expect(frames.map((f) => (f.kind === "update" ? [...f.bytes] : f.kind))).toEqual(payloads.map((p) => [...p]));
      expect(dec.drained).toBe(true);
    }
  });

  it("relay: the update frames come out byte for byte as the Connect envelopes of their payloads", () => {
    const envelopes = concatBytes(payloads.map((p) => envelopeFrame(0, p)));
    expect(updates).toEqual(envelopes);
    for (let a = 0; a <= updates.length; a += 7) {
      for (let b = a; b <= updates.length; b += 13) {
        const dec = new FrameDecoder();
        const out = cut(updates, [a, b]).flatMap((c) => dec.relay(c).envelopes ?? []);
        expect(concatBytes(out)).toEqual(envelopes);
        expect(dec.drained).toBe(true);
      }
    }
  });

  it("relay: holds a partial frame back until its last byte arrives", () => {
    const dec = new FrameDecoder();
    const first = encodeUpdateFrame(payloads[2]!);
    expect(dec.relay(first.subarray(0, 100)).envelopes).toBeUndefined();
    expect(dec.drained).toBe(false);
    expect(dec.relay(first.subarray(100)).envelopes).toEqual(first);
    expect(dec.drained).toBe(true);
  });

  it("relay: a failure frame ends the updates before it and is returned decoded", () => {
    const stream = concatBytes([encodeUpdateFrame(payloads[1]!), failure, encodeUpdateFrame(payloads[3]!)]);
    for (let at = 0; at <= stream.length; at++) {
      const dec = new FrameDecoder();
      const sent: Uint8Array[] = [];
      let ended;
      // As the Worker reads: chunk by chunk, stopping at the failure.
      for (const c of cut(stream, [at])) {
        const r = dec.relay(c);
        if (r.envelopes) sent.push(r.envelopes);
        if ((ended = r.failure)) break;
      }
      expect(concatBytes(sent)).toEqual(encodeUpdateFrame(payloads[1]!));
      expect(ended).toEqual({ ok: false, reason: "session_busy", message: "a turn is running" });
    }
  });
});
