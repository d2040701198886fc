/**
 * objects/exec-frames.ts in process: the Exec stream's frames reassembled from chunks split at
 * every byte; the end frame; FrameSink sending the frames written before it next waits as one
 * chunk; and, with the caller's protocol, the answer exactly as the client reads it (the Worker's
 * Exec route, worker/exec-stream-route.ts, hands it on untouched) and its outcome told once.
 */
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { END_FRAME, encodeFailureFrame, encodeUpdateFrame, FrameDecoder, FrameSink } from "../../../objects/exec-frames.js";
import { concatBytes } from "../../../proto/bytes.js";
import { envelopeFrame, streamEnd } from "../../../proto/record-envelopes.js";

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

  it("the end frame: push returns it after the updates", () => {
    const dec = new FrameDecoder();
    expect(dec.push(concatBytes([encodeUpdateFrame(payloads[3]!), END_FRAME])).map((f) => f.kind)).toEqual(["update", "end"]);
  });
});

/**
 * A wait, as a turn waits on something outside it. An immediate, not a 0 ms timer: immediates run
 * in the order they were set, so the sink's own (set when a frame was written) has run by the time
 * this one does. Node may run a 0 ms timer before an immediate set earlier, which joined chunks
 * the test expected apart on a busy machine.
 */
const aWait = () => new Promise<void>((ok) => setImmediate(ok));

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
    await aWait();
    sink.update(payloads[2]!);
    sink.update(payloads[3]!);
    await aWait();
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
    await aWait();
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
    await aWait();
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
    await aWait();
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

  it("with the caller's protocol: update frames are its data envelopes, and the stream ends with its OK ending, or the failure's code and message", async () => {
    // An update frame is a data envelope byte for byte: the client reads the frames as they are.
    expect(updates).toEqual(concatBytes(payloads.map((p) => envelopeFrame(0, p))));
    for (const ending of ["connect", "grpc-web"] as const) {
      const told: [Code | undefined, boolean][] = [];
      const ok = new FrameSink({ endFrame: true, ending, ended: (code, first) => told.push([code, first !== undefined]) });
      const read = chunksOf(ok);
      for (const p of payloads) ok.update(p);
      ok.close();
      ok.close();
      expect(concatBytes(await read)).toEqual(concatBytes([updates, streamEnd(ending)]));
      expect(told).toEqual([[undefined, true]]);

      told.length = 0;
      const failing = new FrameSink({ endFrame: true, ending, ended: (code, first) => told.push([code, first !== undefined]) });
      const failed = chunksOf(failing);
      failing.update(payloads[1]!);
      failing.fail({ ok: false, reason: "session_busy", message: "a turn is running" });
      expect(concatBytes(await failed)).toEqual(
        concatBytes([encodeUpdateFrame(payloads[1]!), streamEnd(ending, { code: Code.Aborted, message: "a turn is running" })]),
      );
      expect(told).toEqual([[Code.Aborted, true]]);
    }
  });

  it("with the caller's protocol: a whole answer carries its ending; a reader that goes away first is told as CANCELED, once", async () => {
    const told: (Code | undefined)[] = [];
    const whole = new FrameSink({ whole: true, ending: "connect", ended: (code) => told.push(code) });
    const started = whole.start();
    whole.update(payloads[1]!);
    whole.fail({ ok: false, reason: "deadline_exceeded", message: "too late" });
    expect(await started).toEqual({
      whole: concatBytes([encodeUpdateFrame(payloads[1]!), streamEnd("connect", { code: Code.DeadlineExceeded, message: "too late" })]),
    });
    expect(told).toEqual([Code.DeadlineExceeded]);

    told.length = 0;
    const left = new FrameSink({ ending: "connect", ended: (code) => told.push(code) });
    left.update(payloads[1]!);
    await left.stream.cancel();
    left.update(payloads[2]!);
    left.close();
    expect(told).toEqual([Code.Canceled]);
  });

  it("a reader that went away drops what is queued without failing the writer", async () => {
    const sink = new FrameSink();
    sink.update(payloads[1]!);
    await sink.stream.cancel();
    expect(() => sink.update(payloads[2]!)).not.toThrow();
    await aWait();
    expect(() => sink.close()).not.toThrow();
  });
});
