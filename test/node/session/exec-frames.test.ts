/**
 * objects/exec-frames.ts in process: the Exec stream's frames reassembled from chunks split at
 * every byte, and relayed as Connect envelopes without being re-framed (the Worker's Exec route,
 * worker/exec-stream-route.ts, forwards `relay`'s bytes as the response body); the end frame; and
 * FrameSink sending the frames written before it next waits as one chunk.
 */
import { describe, expect, it } from "vitest";
import { END_FRAME, encodeFailureFrame, encodeUpdateFrame, FrameDecoder, FrameSink } from "../../../objects/exec-frames.js";
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

  it("the end frame: relay says the stream ended and hands on nothing after it; push returns it", () => {
    const stream = concatBytes([updates, END_FRAME, encodeUpdateFrame(payloads[1]!), failure]);
    for (let at = 0; at <= stream.length; at += 3) {
      const dec = new FrameDecoder();
      const sent: Uint8Array[] = [];
      let ended = false;
      for (const c of cut(stream, [at])) {
        const r = dec.relay(c);
        if (r.envelopes) sent.push(r.envelopes);
        expect(r.failure).toBeUndefined();
        if ((ended = r.ended === true)) break;
      }
      expect(ended).toBe(true);
      expect(concatBytes(sent)).toEqual(updates);
      expect(dec.drained).toBe(true);
    }
    const dec = new FrameDecoder();
    expect(dec.push(concatBytes([encodeUpdateFrame(payloads[3]!), END_FRAME])).map((f) => f.kind)).toEqual(["update", "end"]);
  });
});

/** Every chunk the sink's stream gives until it closes. */
async function chunksOf(sink: FrameSink): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  const reader = sink.stream.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) out.push(r.value);
  return out;
}

describe("FrameSink", () => {
  it("sends the frames written before it next waits as one chunk, and the frames after as the next", async () => {
    const sink = new FrameSink();
    const read = chunksOf(sink);
    sink.update(payloads[0]!);
    // Promise callbacks are not a wait: a turn that runs on them alone answers in one chunk.
    await Promise.resolve();
    sink.update(payloads[1]!);
    await new Promise((ok) => setTimeout(ok, 0));
    sink.update(payloads[2]!);
    sink.update(payloads[3]!);
    await new Promise((ok) => setTimeout(ok, 0));
    sink.close();
    const chunks = await read;
    expect(chunks).toHaveLength(2);
    expect(concatBytes(chunks)).toEqual(updates);
    const dec = new FrameDecoder();
    expect(chunks.flatMap((c) => dec.push(c)).map((f) => (f.kind === "update" ? [...f.bytes] : f.kind))).toEqual(payloads.map((p) => [...p]));
  });

  it("close and fail send what is still queued first, in order", async () => {
    const closing = new FrameSink();
    const closed = chunksOf(closing);
    closing.update(payloads[1]!);
    closing.close();
    expect(concatBytes(await closed)).toEqual(encodeUpdateFrame(payloads[1]!));

    const failing = new FrameSink();
    const failed = chunksOf(failing);
    failing.update(payloads[2]!);
    failing.fail({ ok: false, reason: "session_busy", message: "a turn is running" });
    // Written after the end: dropped.
    failing.update(payloads[3]!);
    await new Promise((ok) => setTimeout(ok, 0));
    expect(concatBytes(await failed)).toEqual(concatBytes([encodeUpdateFrame(payloads[2]!), failure]));
  });

  it("closes with the end frame only when asked, and never after a failure", async () => {
    const asked = new FrameSink({ endFrame: true });
    const closed = chunksOf(asked);
    asked.update(payloads[1]!);
    asked.close();
    expect(await closed).toEqual([concatBytes([encodeUpdateFrame(payloads[1]!), END_FRAME])]);

    const plain = new FrameSink();
    const plainly = chunksOf(plain);
    plain.update(payloads[1]!);
    plain.close();
    expect(concatBytes(await plainly)).toEqual(encodeUpdateFrame(payloads[1]!));

    const failing = new FrameSink({ endFrame: true });
    const failed = chunksOf(failing);
    failing.fail({ ok: false, reason: "session_busy", message: "a turn is running" });
    expect(concatBytes(await failed)).toEqual(failure);
  });

  it("hold: nothing is sent across waits until close, then everything as one chunk", async () => {
    const sink = new FrameSink({ endFrame: true });
    const chunks: Uint8Array[] = [];
    const reader = sink.stream.getReader();
    const reading = (async () => {
      for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
    })();
    sink.update(payloads[0]!);
    await new Promise((ok) => setTimeout(ok, 0));
    expect(chunks).toHaveLength(1);
    sink.update(payloads[1]!);
    sink.hold();
    await new Promise((ok) => setTimeout(ok, 5));
    sink.update(payloads[2]!);
    await new Promise((ok) => setTimeout(ok, 5));
    expect(chunks).toHaveLength(1);
    sink.update(payloads[3]!);
    sink.close();
    await reading;
    expect(chunks).toEqual([encodeUpdateFrame(payloads[0]!), concatBytes([...payloads.slice(1).map(encodeUpdateFrame), END_FRAME])]);
  });

  it("start: an answer that ends before its first chunk is due comes back whole, as bytes, with no stream", async () => {
    const sink = new FrameSink({ endFrame: true, whole: true });
    const started = sink.start();
    sink.update(payloads[0]!);
    // Promise callbacks are not a wait: the turn is still within its first chunk.
    await Promise.resolve();
    sink.update(payloads[1]!);
    sink.close();
    expect(await started).toEqual({ whole: concatBytes([encodeUpdateFrame(payloads[0]!), encodeUpdateFrame(payloads[1]!), END_FRAME]) });

    const failing = new FrameSink({ endFrame: true, whole: true });
    failing.update(payloads[2]!);
    failing.fail({ ok: false, reason: "session_busy", message: "a turn is running" });
    // Ended before start was asked: answered at once.
    expect(await failing.start()).toEqual({ whole: concatBytes([encodeUpdateFrame(payloads[2]!), failure]) });
  });

  it("start: an answer that waits comes back as the stream, which begins with the chunk that was due", async () => {
    const sink = new FrameSink({ endFrame: true, whole: true });
    const started = sink.start();
    sink.update(payloads[0]!);
    sink.update(payloads[1]!);
    const start = await started;
    if (!("frames" in start)) throw new Error("a turn that waited came back whole");
    sink.update(payloads[2]!);
    await new Promise((ok) => setTimeout(ok, 0));
    sink.update(payloads[3]!);
    sink.close();
    const chunks: Uint8Array[] = [];
    const reader = start.frames.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
    expect(chunks).toEqual([
      concatBytes([encodeUpdateFrame(payloads[0]!), encodeUpdateFrame(payloads[1]!)]),
      encodeUpdateFrame(payloads[2]!),
      concatBytes([encodeUpdateFrame(payloads[3]!), END_FRAME]),
    ]);
  });

  it("a reader that went away drops what is queued without failing the writer", async () => {
    const sink = new FrameSink();
    sink.update(payloads[1]!);
    await sink.stream.cancel();
    expect(() => sink.update(payloads[2]!)).not.toThrow();
    await new Promise((ok) => setTimeout(ok, 0));
    expect(() => sink.close()).not.toThrow();
  });
});
