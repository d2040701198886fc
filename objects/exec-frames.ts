/**
 * Framing of the Exec stream between a SessionObject and the Worker.
 *
 * Durable Object RPC carries byte streams whose chunk boundaries are not preserved, so each frame
 * is `kind (1 byte) | length (4 bytes, big-endian) | payload`: kind 0 carries a binary ExecUpdate,
 * kind 1 a JSON Failure that ends the stream. Encoded in objects/, decoded in worker/.
 */
import type { Failure } from "./session/outcomes.js";

const UPDATE = 0;
const FAILURE = 1;

export type Frame = { kind: "update"; bytes: Uint8Array } | { kind: "failure"; failure: Failure };

export function encodeUpdateFrame(updateBytes: Uint8Array): Uint8Array {
  return frame(UPDATE, updateBytes);
}

export function encodeFailureFrame(f: Failure): Uint8Array {
  return frame(FAILURE, new TextEncoder().encode(JSON.stringify({ reason: f.reason, message: f.message })));
}

function frame(kind: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + payload.length);
  out[0] = kind;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

/** Reassembles frames from arbitrarily split chunks. */
export class FrameDecoder {
  private _buf = new Uint8Array(0);

  push(chunk: Uint8Array): Frame[] {
    const joined = new Uint8Array(this._buf.length + chunk.length);
    joined.set(this._buf);
    joined.set(chunk, this._buf.length);
    const frames: Frame[] = [];
    let at = 0;
    while (joined.length - at >= 5) {
      const len = new DataView(joined.buffer, joined.byteOffset + at + 1, 4).getUint32(0);
      if (joined.length - at - 5 < len) break;
      const payload = joined.slice(at + 5, at + 5 + len);
      if (joined[at] === UPDATE) frames.push({ kind: "update", bytes: payload });
      else {
        const f = JSON.parse(new TextDecoder().decode(payload)) as Pick<Failure, "reason" | "message">;
        frames.push({ kind: "failure", failure: { ok: false, reason: f.reason, message: f.message } });
      }
      at += 5 + len;
    }
    this._buf = joined.slice(at);
    return frames;
  }

  /** True when no partial frame is pending. */
  get drained(): boolean {
    return this._buf.length === 0;
  }
}

/**
 * The producing side of an Exec stream: frames are queued as they happen and handed to the Worker
 * as a byte stream. A reader that went away never fails the turn: its records are durable anyway.
 */
export class FrameSink {
  readonly stream: ReadableStream<Uint8Array>;
  private _ctl!: ReadableStreamDefaultController<Uint8Array>;
  private _open = true;

  constructor() {
    this.stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        this._ctl = c;
      },
      cancel: () => {
        this._open = false;
      },
    });
  }

  update(updateBytes: Uint8Array): void {
    this._push(encodeUpdateFrame(updateBytes));
  }

  fail(f: Failure): void {
    this._push(encodeFailureFrame(f));
    this.close();
  }

  close(): void {
    if (!this._open) return;
    this._open = false;
    try {
      this._ctl.close();
    } catch {
      // the reader already went away
    }
  }

  private _push(bytes: Uint8Array): void {
    if (!this._open) return;
    try {
      this._ctl.enqueue(bytes);
    } catch {
      this._open = false;
    }
  }
}
