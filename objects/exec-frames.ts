/**
 * Framing of the Exec stream between a SessionObject and the Worker.
 *
 * Durable Object RPC carries byte streams whose chunk boundaries are not preserved, so each frame
 * is `kind (1 byte) | length (4 bytes, big-endian) | payload`: kind 0 carries a binary ExecUpdate,
 * kind 1 a JSON Failure that ends the stream, kind 2 (empty) says the stream ended well and nothing
 * follows. The end frame is sent only to a reader that asked for it (`FrameSink` `endFrame`): a
 * Worker of an older version, during a deploy, would take any frame it does not know for a failure.
 * Encoded in objects/, decoded in worker/.
 *
 * A reader that names its caller's protocol (`FrameSinkOptions.ending`: the Worker's binary Exec,
 * worker/exec-stream-route.ts) gets the answer exactly as the client does instead: the update
 * frames, which are laid out as data envelopes already, then that protocol's ending, OK or the
 * failure's code and message. The Worker then hands the stream on untouched, and workerd carries
 * each chunk to the client without calling into JavaScript; the object writes the request's line.
 */
import { Code } from "@connectrpc/connect";
import { clearImmediate, setImmediate } from "node:timers";
import { concatBytes } from "../proto/bytes.js";
import { type Ending, streamEnd } from "../proto/record-envelopes.js";
import { codeFor, type Failure } from "./session/outcomes.js";

const UPDATE = 0;
const FAILURE = 1;
const END = 2;

export type Frame = { kind: "update"; bytes: Uint8Array } | { kind: "failure"; failure: Failure } | { kind: "end" };

export function encodeUpdateFrame(updateBytes: Uint8Array): Uint8Array {
  return frame(UPDATE, updateBytes);
}

export function encodeFailureFrame(f: Failure): Uint8Array {
  return frame(FAILURE, new TextEncoder().encode(JSON.stringify({ reason: f.reason, message: f.message })));
}

/** The frame that ends a stream well (see the top of this file). */
export const END_FRAME: Uint8Array = new Uint8Array([END, 0, 0, 0, 0]);

function frame(kind: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + payload.length);
  out[0] = kind;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

/** Reassembles frames from arbitrarily split chunks. */
export class FrameDecoder {
  private _buf: Uint8Array = new Uint8Array(0);

  push(chunk: Uint8Array): Frame[] {
    const joined = this._join(chunk);
    const frames: Frame[] = [];
    let at = 0;
    for (let len = wholeFrame(joined, at); len >= 0; len = wholeFrame(joined, at)) {
      const payload = joined.subarray(at + 5, at + 5 + len);
      const kind = joined[at];
      frames.push(kind === UPDATE ? { kind: "update", bytes: payload } : kind === END ? { kind: "end" } : { kind: "failure", failure: failureOf(payload) });
      at += 5 + len;
    }
    this._buf = this._rest(joined, at);
    return frames;
  }

  /** A partial frame after `at`, copied: the bytes before it may be handed on. */
  private _rest(joined: Uint8Array, at: number): Uint8Array {
    return at === joined.length ? new Uint8Array(0) : joined.slice(at);
  }

  private _join(chunk: Uint8Array): Uint8Array {
    if (this._buf.length === 0) return chunk;
    const joined = new Uint8Array(this._buf.length + chunk.length);
    joined.set(this._buf);
    joined.set(chunk, this._buf.length);
    return joined;
  }

  /** True when no partial frame is pending. */
  get drained(): boolean {
    return this._buf.length === 0;
  }
}

/** The payload length of the whole frame at `at`, or -1 when the bytes hold only part of one. */
function wholeFrame(b: Uint8Array, at: number): number {
  if (b.length - at < 5) return -1;
  const len = ((b[at + 1]! << 24) | (b[at + 2]! << 16) | (b[at + 3]! << 8) | b[at + 4]!) >>> 0;
  return b.length - at - 5 < len ? -1 : len;
}

function failureOf(payload: Uint8Array): Failure {
  const f = JSON.parse(new TextDecoder().decode(payload)) as Pick<Failure, "reason" | "message">;
  return { ok: false, reason: f.reason, message: f.message };
}

/**
 * How a reader wants its Exec stream: `endFrame`, closed with the end frame (see the top of this
 * file); `whole`, the answer's first chunk is waited for (`FrameSink.start`), and an answer that
 * ends within it comes back as bytes, with no stream to relay them.
 */
export interface FrameSinkOptions {
  endFrame?: boolean;
  whole?: boolean;
  /** The caller's protocol: the stream is the answer as the client reads it (see the top of this file). */
  ending?: Ending;
  /**
   * Told once how the answer ended: its code (undefined for OK; CANCELED when its reader went away
   * first) and when its first chunk went out (Date.now()), if one did. The session object writes
   * the request's line from it when the Worker hands the stream on untouched (`ending`).
   */
  ended?: (code: Code | undefined, firstChunkMs: number | undefined) => void;
}

/**
 * How a stream starts for a `whole` reader: the whole answer when it ended before its first chunk
 * was due, else the stream (which begins with that chunk).
 */
export type FrameStart = { whole: Uint8Array } | { frames: ReadableStream<Uint8Array> };

/**
 * The producing side of an Exec stream: frames are queued as they happen and handed to the Worker
 * as a byte stream. A reader that went away never fails the turn: its records are durable anyway.
 *
 * Frames are sent when the object next waits on something outside it (an immediate fires then; in
 * workerd a setImmediate and its clear cost about a third of a 0 ms setTimeout's and its clear's),
 * not one chunk per frame: each chunk costs the RPC stream, the Worker's relay, the HTTP response
 * and the client a step of their own, and a turn that runs without waiting (an echo turn) can
 * answer in one. A turn that waits (a provider's model call, a tool) streams what it committed
 * before the wait. The stream itself is made only when a chunk goes out through it: an answer
 * that a `whole` reader takes as bytes never needs one.
 */
export class FrameSink {
  private _stream: ReadableStream<Uint8Array> | undefined;
  private _ctl: ReadableStreamDefaultController<Uint8Array> | undefined;
  private _open = true;
  private _failed = false;
  private _held = false;
  private _timer: ReturnType<typeof setImmediate> | undefined;
  private _pending: Uint8Array[] = [];
  /** Chunks due before the stream was made: its first ones. */
  private _early: Uint8Array[] = [];
  private _due: (() => void) | undefined;
  /** The code the answer ends with: a failure's, else undefined (OK). */
  private _code: Code | undefined;
  private _firstChunkMs: number | undefined;
  private _reported = false;

  constructor(private readonly _o: FrameSinkOptions = {}) {}

  get stream(): ReadableStream<Uint8Array> {
    this._stream ??= new ReadableStream<Uint8Array>({
      start: (c) => {
        for (const chunk of this._early) c.enqueue(chunk);
        this._early = [];
        if (this._open) this._ctl = c;
        else c.close();
      },
      cancel: () => {
        if (this._open) this._report(Code.Canceled);
        this._open = false;
      },
    });
    return this._stream;
  }

  /**
   * Waits until the first chunk is due (or the stream ended), then says how the stream starts: the
   * whole answer as bytes when it ended, else the stream.
   */
  async start(): Promise<FrameStart> {
    if (this._open && this._early.length === 0) await new Promise<void>((due) => (this._due = due));
    if (this._open || this._stream) return { frames: this.stream };
    const whole = this._early.length === 1 ? this._early[0]! : concatBytes(this._early);
    this._early = [];
    return { whole };
  }

  update(updateBytes: Uint8Array): void {
    this._push(encodeUpdateFrame(updateBytes));
  }

  /** An update frame already made (proto/record-envelopes.ts `recordUpdateEnvelope`: kind 0 is a data envelope's flag). */
  updateFrame(frame: Uint8Array): void {
    this._push(frame);
  }

  fail(f: Failure): void {
    const ending = this._o.ending;
    this._code = codeFor(f.reason);
    this._push(ending ? streamEnd(ending, { code: this._code, message: f.message }) : encodeFailureFrame(f));
    this._failed = true;
    this.close();
  }

  /**
   * Sends nothing more until close: for the wait after a turn's last record (its Directory
   * report), so the records, the end and the end frame go as one chunk.
   */
  hold(): void {
    this._held = true;
    this._cancelTimer();
  }

  close(): void {
    if (!this._open) return;
    const ending = this._o.ending;
    if (!this._failed) {
      if (ending) this._pending.push(streamEnd(ending));
      else if (this._o.endFrame) this._pending.push(END_FRAME);
    }
    this._flush();
    this._open = false;
    this._wake();
    this._report(this._code);
    if (!this._ctl) return;
    try {
      this._ctl.close();
    } catch {
      // the reader already went away
    }
  }

  private _push(bytes: Uint8Array): void {
    if (!this._open) return;
    this._pending.push(bytes);
    if (this._timer === undefined && !this._held) this._timer = setImmediate(() => this._flush());
  }

  private _cancelTimer(): void {
    if (this._timer === undefined) return;
    clearImmediate(this._timer);
    this._timer = undefined;
  }

  private _flush(): void {
    this._cancelTimer();
    const parts = this._pending;
    if (parts.length === 0 || !this._open) return;
    this._pending = [];
    const chunk = parts.length === 1 ? parts[0]! : concatBytes(parts);
    this._firstChunkMs ??= Date.now();
    if (!this._ctl) {
      this._early.push(chunk);
      this._wake();
      return;
    }
    try {
      this._ctl.enqueue(chunk);
    } catch {
      this._open = false;
    }
  }

  private _report(code: Code | undefined): void {
    if (this._reported || !this._o.ended) return;
    this._reported = true;
    this._o.ended(code, this._firstChunkMs);
  }

  private _wake(): void {
    const due = this._due;
    this._due = undefined;
    due?.();
  }
}
