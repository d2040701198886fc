/**
 * LogRecords written straight into enveloped stream frames (a flag byte, a 4-byte big-endian
 * length, the message), from the columns a journal stores: the encoding protobuf-es would give the
 * decoded record (fields 1-4 as set, then the event's stored bytes as field 5), without building a
 * message or re-encoding the event. Connect streaming and gRPC-Web share this framing. The session
 * object batches many records per chunk for Replay and Tail (objects/session/record-stream.ts).
 * Tested against toBinary in test/node/proto/record-envelopes.test.ts.
 */

import { codeToString } from "@connectrpc/connect/protocol-connect";

export interface RecordColumns {
  seq: bigint;
  prevHash: string;
  hash: string;
  fence: bigint;
  event: Uint8Array;
}

/** Appends enveloped LogRecords to one growing buffer; `take()` hands the bytes out and starts over. */
export class EnvelopeWriter {
  private _buf = new Uint8Array(64 * 1024);
  private _len = 0;

  get length(): number {
    return this._len;
  }

  pushRecord(r: RecordColumns): void {
    const size = recordSize(r);
    this._reserve(5 + size);
    const b = this._buf;
    let at = this._len;
    b[at] = 0;
    b[at + 1] = size >>> 24;
    b[at + 2] = (size >>> 16) & 0xff;
    b[at + 3] = (size >>> 8) & 0xff;
    b[at + 4] = size & 0xff;
    at += 5;
    if (r.seq !== 0n) {
      b[at++] = 0x08;
      at = varint(b, at, r.seq);
    }
    at = ascii(b, at, 0x12, r.prevHash);
    at = ascii(b, at, 0x1a, r.hash);
    if (r.fence !== 0n) {
      b[at++] = 0x20;
      at = varint(b, at, r.fence);
    }
    b[at++] = 0x2a;
    at = varint(b, at, r.event.length);
    b.set(r.event, at);
    this._len = at + r.event.length;
  }

  take(): Uint8Array {
    const out = this._buf.slice(0, this._len);
    this._len = 0;
    return out;
  }

  private _reserve(n: number): void {
    if (this._len + n <= this._buf.length) return;
    const next = new Uint8Array(Math.max(this._buf.length * 2, this._len + n));
    next.set(this._buf.subarray(0, this._len));
    this._buf = next;
  }
}

function recordSize(r: RecordColumns): number {
  // Lengths as numbers, not bigints: a bigint per field per record was a visible part of a Replay's CPU.
  let n = 0;
  if (r.seq !== 0n) n += 1 + varintSize(r.seq);
  if (r.prevHash !== "") n += 1 + varintSize(r.prevHash.length) + r.prevHash.length;
  if (r.hash !== "") n += 1 + varintSize(r.hash.length) + r.hash.length;
  if (r.fence !== 0n) n += 1 + varintSize(r.fence);
  return n + 1 + varintSize(r.event.length) + r.event.length;
}

/** A string field of ASCII characters (hex hashes); omitted when empty, as proto3 omits it. */
function ascii(b: Uint8Array, at: number, tag: number, s: string): number {
  if (s === "") return at;
  b[at++] = tag;
  at = varint(b, at, s.length);
  for (let i = 0; i < s.length; i++) b[at++] = s.charCodeAt(i);
  return at;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function varintSize(v: bigint | number): number {
  let n = 1;
  if (typeof v === "bigint" && v > MAX_SAFE) {
    for (let y = v >> 7n; y > 0n; y >>= 7n) n++;
    return n;
  }
  for (let x = Number(v); x >= 0x80; x = Math.floor(x / 0x80)) n++;
  return n;
}

/** A varint of a non-negative value (seqs, fences, lengths): the journal never stores a negative one. */
function varint(b: Uint8Array, at: number, v: bigint | number): number {
  if (typeof v === "bigint" && v > MAX_SAFE) {
    let y = v;
    while (y > 0x7fn) {
      b[at++] = Number(y & 0x7fn) | 0x80;
      y >>= 7n;
    }
    b[at++] = Number(y);
    return at;
  }
  let x = Number(v);
  if (x < 2 ** 31) {
    while (x > 0x7f) {
      b[at++] = (x & 0x7f) | 0x80;
      x >>>= 7;
    }
    b[at++] = x;
    return at;
  }
  // Beyond 31 bits and below 2^53: 7 bits at a time by division, exact for these.
  while (x > 0x7f) {
    b[at++] = (x % 0x80) | 0x80;
    x = Math.floor(x / 0x80);
  }
  b[at++] = x;
  return at;
}

/** A Connect end-of-stream frame: `{}` when the stream ended well, else its error. */
/** How a stream ends on the wire: Connect's end-stream frame, or gRPC-Web's trailer frame. */
export type Ending = "connect" | "grpc-web";

/** The end of a stream in the caller's protocol: OK, or the error (its code and message). */
export function streamEnd(ending: Ending, e?: { code: number; message: string }): Uint8Array {
  if (ending === "connect") return e ? connectEndFrame({ code: codeToString(e.code), message: e.message }) : connectEndFrame();
  return e ? grpcWebTrailerFrame(e.code, e.message) : grpcWebTrailerFrame(0);
}

export function connectEndFrame(error?: { code: string; message: string }): Uint8Array {
  const body = new TextEncoder().encode(JSON.stringify(error ? { error } : {}));
  return envelopeFrame(0x02, body);
}

/** A gRPC-Web trailer frame carrying the status (0 when the stream ended well). */
export function grpcWebTrailerFrame(code: number, message = ""): Uint8Array {
  const text = `grpc-status: ${code}\r\n${message ? `grpc-message: ${encodeURIComponent(message)}\r\n` : ""}`;
  return envelopeFrame(0x80, new TextEncoder().encode(text));
}

/** One envelope of Connect streaming or gRPC-Web: flags, the payload's length (big-endian), the payload. */
export function envelopeFrame(flags: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + payload.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}
