/**
 * LogRecords written straight into enveloped stream frames (a flag byte, a 4-byte big-endian
 * length, the message), from the columns a journal stores: the encoding protobuf-es would give the
 * decoded record (fields 1-4 as set, then the event's stored bytes as field 5), without building a
 * message or re-encoding the event. Connect streaming and gRPC-Web share this framing. The session
 * object batches many records per chunk for Replay and Tail (objects/session/record-stream.ts).
 * Tested against toBinary in test/node/proto/record-envelopes.test.ts.
 */

import { codeToString } from "@connectrpc/connect/protocol-connect";

/**
 * A record's columns: seq and fence as numbers or bigints, each hash as its 64-character text or
 * its 32 bytes (written as lowercase hex, as the text would be), "" for none.
 */
export interface RecordColumns {
  seq: bigint | number;
  prevHash: string | Uint8Array;
  hash: string | Uint8Array;
  fence: bigint | number;
  event: Uint8Array;
  /** Bytes of the event that come before `event` (a journal's short row, objects/journal/stored-event.ts), written first. */
  eventHead?: Uint8Array | undefined;
}

/** Appends enveloped LogRecords to one growing buffer; `take()` hands the bytes out and starts over. */
export class EnvelopeWriter {
  private _buf: Uint8Array;
  private _len = 0;

  /** `capacity`: the bytes expected, so the buffer need not grow (it does when they are more). */
  constructor(capacity = 64 * 1024) {
    this._buf = new Uint8Array(capacity);
  }

  get length(): number {
    return this._len;
  }

  pushRecord(r: RecordColumns): void {
    const size = recordSize(r);
    this._reserve(5 + size);
    this._len = writeRecord(this._buf, writeEnvelopeHead(this._buf, this._len, size), r);
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

/**
 * One record as an enveloped ExecUpdate (its `record`, field 1), in one allocation of its exact
 * size: an Exec stream's update frame (objects/exec-frames.ts), which has a data envelope's layout.
 */
export function recordUpdateEnvelope(r: RecordColumns): Uint8Array {
  const size = recordSize(r);
  const update = 1 + varintSize(size) + size;
  const b = new Uint8Array(5 + update);
  let at = writeEnvelopeHead(b, 0, update);
  b[at++] = 0x0a;
  at = varint(b, at, size);
  writeRecord(b, at, r);
  return b;
}

/**
 * A model's streamed chunk as an enveloped ExecUpdate (its `delta`, field 2): what toBinary gives
 * `{ delta: { executionId, chunk, done } }` (part_index 0, left out as proto3 leaves it out), in one
 * allocation, without building a message. A model's answer streams one of these per chunk it
 * sends (objects/session/turns.ts), so the per-chunk work is only this. The text is written as
 * UTF-8 the way TextEncoder writes it: a lone surrogate becomes U+FFFD, as toBinary makes it.
 */
export function deltaUpdateEnvelope(executionId: string, chunk: string, done: boolean): Uint8Array {
  // At most 3 bytes per UTF-16 unit: written into a scratch buffer, then copied at its exact size.
  const b = scratchOf(5 + 1 + 5 + 1 + 5 + 3 * executionId.length + 1 + 5 + 3 * chunk.length + 2);
  // The Delta's fields after a 5-byte envelope head and the update's 1-byte tag and 5-byte length, moved down once the length is known.
  const start = 11;
  let at = start;
  at = stringField(b, at, 0x0a, executionId);
  at = stringField(b, at, 0x1a, chunk);
  if (done) {
    b[at++] = 0x20;
    b[at++] = 1;
  }
  return wrapDelta(b, start, at);
}

/**
 * A model's streamed chunk as an enveloped TailResponse (its `delta`, field 2, a TailDelta): what
 * toBinary gives `{ delta: { afterSeq, executionId, offset, chunk, done } }`, written as
 * deltaUpdateEnvelope writes an Exec's. A session's followers get one per chunk
 * (objects/session/followers.ts), made once for all of them.
 */
export function tailDeltaEnvelope(afterSeq: bigint, executionId: string, offset: bigint, chunk: string, done: boolean): Uint8Array {
  const b = scratchOf(11 + 11 + 6 + 3 * executionId.length + 11 + 6 + 3 * chunk.length + 2);
  const start = 11;
  let at = start;
  if (afterSeq !== 0n) {
    b[at++] = 0x08;
    at = varint(b, at, afterSeq);
  }
  at = stringField(b, at, 0x12, executionId);
  if (offset !== 0n) {
    b[at++] = 0x18;
    at = varint(b, at, offset);
  }
  at = stringField(b, at, 0x22, chunk);
  if (done) {
    b[at++] = 0x28;
    b[at++] = 1;
  }
  return wrapDelta(b, start, at);
}

/** The message at b[start..at) as field 2 of an enveloped outer message, in one allocation of its size. */
function wrapDelta(b: Uint8Array, start: number, at: number): Uint8Array {
  const delta = at - start;
  const outer = 1 + varintSize(delta) + delta;
  const out = new Uint8Array(5 + outer);
  let o = writeEnvelopeHead(out, 0, outer);
  out[o++] = 0x12;
  o = varint(out, o, delta);
  out.set(b.subarray(start, at), o);
  return out;
}

let deltaScratch = new Uint8Array(4096);

/** The scratch buffer the deltas are written into first, with room for at least `room` bytes. */
function scratchOf(room: number): Uint8Array {
  if (deltaScratch.length < room) deltaScratch = new Uint8Array(Math.max(room, 2 * deltaScratch.length));
  return deltaScratch;
}
const UTF8 = new TextEncoder();

/** A string field with its tag and length at `at` (room for 5 length bytes and 3 bytes a unit); omitted when empty. */
function stringField(b: Uint8Array, at: number, tag: number, s: string): number {
  if (s.length === 0) return at;
  b[at] = tag;
  // Written after a 5-byte length slot, then moved down to follow a length of its own size.
  const n = UTF8.encodeInto(s, b.subarray(at + 6)).written;
  const len = varintSize(n);
  if (len < 5) b.copyWithin(at + 1 + len, at + 6, at + 6 + n);
  varint(b, at + 1, n);
  return at + 1 + len + n;
}

/** A data envelope's flag byte (0) and its 4-byte big-endian length at `at`; answers where the message starts. */
function writeEnvelopeHead(b: Uint8Array, at: number, size: number): number {
  b[at] = 0;
  b[at + 1] = size >>> 24;
  b[at + 2] = (size >>> 16) & 0xff;
  b[at + 3] = (size >>> 8) & 0xff;
  b[at + 4] = size & 0xff;
  return at + 5;
}

/** A LogRecord's fields at `at` (room for recordSize(r) bytes); answers where it ends. */
function writeRecord(b: Uint8Array, at: number, r: RecordColumns): number {
  if (r.seq !== 0n && r.seq !== 0) {
    b[at++] = 0x08;
    at = varint(b, at, r.seq);
  }
  at = hashField(b, at, 0x12, r.prevHash);
  at = hashField(b, at, 0x1a, r.hash);
  if (r.fence !== 0n && r.fence !== 0) {
    b[at++] = 0x20;
    at = varint(b, at, r.fence);
  }
  b[at++] = 0x2a;
  const head = r.eventHead;
  at = varint(b, at, (head?.length ?? 0) + r.event.length);
  if (head !== undefined) {
    b.set(head, at);
    at += head.length;
  }
  b.set(r.event, at);
  return at + r.event.length;
}

function recordSize(r: RecordColumns): number {
  // Lengths as numbers, not bigints: a bigint per field per record was a visible part of a Replay's CPU.
  let n = 0;
  if (r.seq !== 0n && r.seq !== 0) n += 1 + varintSize(r.seq);
  const prev = hashChars(r.prevHash);
  if (prev > 0) n += 1 + varintSize(prev) + prev;
  const hash = hashChars(r.hash);
  if (hash > 0) n += 1 + varintSize(hash) + hash;
  if (r.fence !== 0n && r.fence !== 0) n += 1 + varintSize(r.fence);
  const event = (r.eventHead?.length ?? 0) + r.event.length;
  return n + 1 + varintSize(event) + event;
}

/** The characters of a hash field: the text's, or two hex digits per byte. */
function hashChars(h: string | Uint8Array): number {
  return typeof h === "string" ? h.length : 2 * h.length;
}

/** A hash as a string field of ASCII characters; omitted when empty, as proto3 omits it. */
function hashField(b: Uint8Array, at: number, tag: number, h: string | Uint8Array): number {
  const n = hashChars(h);
  if (n === 0) return at;
  b[at++] = tag;
  at = varint(b, at, n);
  if (typeof h === "string") {
    for (let i = 0; i < h.length; i++) b[at++] = h.charCodeAt(i);
    return at;
  }
  for (let i = 0; i < h.length; i++) {
    b[at++] = HEX_DIGITS[h[i]! >>> 4]!;
    b[at++] = HEX_DIGITS[h[i]! & 15]!;
  }
  return at;
}

/** The character codes of 0-9a-f. */
const HEX_DIGITS = new Uint8Array([..."0123456789abcdef"].map((c) => c.charCodeAt(0)));

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

/**
 * A ListSessionsResponse from Sessions already encoded (the Directory's rows, a live session's own
 * answer): each as field 1, then the page token as field 2 when there is one. What toBinary gives
 * the decoded page, without decoding a Session (worker/unary-route.ts; tested against toBinary).
 */
export function listSessionsResponseBytes(sessions: readonly Uint8Array[], nextPageToken: string): Uint8Array {
  const token = nextPageToken === "" ? undefined : UTF8.encode(nextPageToken);
  let size = token ? 1 + varintSize(token.length) + token.length : 0;
  for (const s of sessions) size += 1 + varintSize(s.length) + s.length;
  const b = new Uint8Array(size);
  let at = 0;
  for (const s of sessions) {
    b[at++] = 0x0a;
    at = varint(b, at, s.length);
    b.set(s, at);
    at += s.length;
  }
  if (token) {
    b[at++] = 0x12;
    at = varint(b, at, token.length);
    b.set(token, at);
  }
  return b;
}

/** How a stream ends on the wire: Connect's end-stream frame, or gRPC-Web's trailer frame. */
export type Ending = "connect" | "grpc-web";

/** The end of a stream in the caller's protocol: OK, or the error (its code and message). */
export function streamEnd(ending: Ending, e?: { code: number; message: string }): Uint8Array {
  // A copy of the one OK ending made at load: a stream's every answer ends with one.
  if (!e) return (ending === "connect" ? CONNECT_OK : GRPC_WEB_OK).slice();
  if (ending === "connect") return connectEndFrame({ code: codeToString(e.code), message: e.message });
  return grpcWebTrailerFrame(e.code, e.message);
}

/** A Connect end-of-stream frame: `{}` when the stream ended well, else its error. */
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

const CONNECT_OK = connectEndFrame();
const GRPC_WEB_OK = grpcWebTrailerFrame(0);
