/**
 * A run of stored records packed into one byte array, for a fork's copy: one structured clone of
 * bytes per Durable Object call instead of thousands of objects. Per record:
 * `[flags][seq varint][fence varint][prev hash, when flags say so][hash][event length varint][event]`.
 *
 * Hashes are their 32 stored bytes (flag RAW), and a record whose prev hash is the previous
 * record's hash in the pack leaves it out (flag CHAINED), so a child binds the pack's own bytes
 * when it stores them (Journal.seedPacked) and converts nothing: a fork copies every record to
 * every child, so this runs N × prefix times. GENESIS is a record with no prev hash (seq 1). Packs
 * of the earlier form, 64 ASCII hex bytes per hash and every prev hash present, still unpack.
 * Used by worker/fork.ts between a parent and its children; tested in
 * test/node/journal/record-pack.test.ts.
 */
import { bytesOfHex, hexOf } from "../../proto/bytes.js";
import type { ContentHash } from "../../proto/canon.js";
import type { StoredRecord } from "./journal.js";

const GENESIS = 1;
const RAW = 2;
const CHAINED = 4;
const RAW_HASH = 32;
const HEX_HASH = 64;

/** One packed record; `prevHash` (undefined: genesis), `hash` and `event` are views into the pack. */
export interface PackedRecord {
  seq: number;
  fence: number;
  prevHash: Uint8Array | undefined;
  hash: Uint8Array;
  event: Uint8Array;
}

export function packRecords(records: readonly StoredRecord[]): Uint8Array {
  let size = 0;
  for (const r of records) size += 1 + 9 + 9 + 2 * RAW_HASH + 5 + r.event.length;
  const b = new Uint8Array(size);
  let at = 0;
  let before: string | undefined;
  for (const r of records) {
    const flags = RAW | (r.prevHash === "" ? GENESIS : r.prevHash === before ? CHAINED : 0);
    b[at++] = flags;
    at = varint(b, at, Number(r.seq));
    at = varint(b, at, Number(r.fence));
    if (!(flags & (GENESIS | CHAINED))) at = hexInto(b, at, r.prevHash);
    at = hexInto(b, at, r.hash);
    at = varint(b, at, r.event.length);
    b.set(r.event, at);
    at += r.event.length;
    before = r.hash;
  }
  return b.subarray(0, at);
}

/** Calls `fn` with each packed record in order; throws on a pack that ends early or is malformed. */
export function eachPacked(b: Uint8Array, fn: (r: PackedRecord) => void): void {
  let at = 0;
  const next = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const byte = b[at++];
      if (byte === undefined) throw new Error("packed records end inside a varint");
      v += (byte & 0x7f) * mul;
      if ((byte & 0x80) === 0) return v;
      mul *= 128;
    }
  };
  let raw = false;
  const hash = (): Uint8Array => {
    const n = raw ? RAW_HASH : HEX_HASH;
    if (at + n > b.length) throw new Error("packed records end inside a hash");
    const h = raw ? b.subarray(at, at + n) : bytesOfAscii(b.subarray(at, at + n));
    at += n;
    return h;
  };
  let before: Uint8Array | undefined;
  while (at < b.length) {
    const flags = b[at++]!;
    raw = (flags & RAW) !== 0;
    const seq = next();
    const fence = next();
    let prevHash: Uint8Array | undefined;
    if (flags & CHAINED) {
      if (!before) throw new Error("a packed record chains to no record before it");
      prevHash = before;
    } else if (!(flags & GENESIS)) prevHash = hash();
    const h = hash();
    const len = next();
    if (at + len > b.length) throw new Error("packed records end inside an event");
    fn({ seq, fence, prevHash, hash: h, event: b.subarray(at, at + len) });
    at += len;
    before = h;
  }
}

export function unpackRecords(b: Uint8Array): StoredRecord[] {
  const out: StoredRecord[] = [];
  eachPacked(b, (r) =>
    out.push({
      seq: BigInt(r.seq),
      prevHash: (r.prevHash ? hexOf(r.prevHash) : "") as ContentHash,
      hash: hexOf(r.hash) as ContentHash,
      fence: BigInt(r.fence),
      event: r.event,
    }),
  );
  return out;
}

/** Writes `v` (non-negative and below 2^53: seqs, fences, lengths, distances) as a varint at `at`; returns where it ends. */
export function varint(b: Uint8Array, at: number, v: number): number {
  let x = v;
  while (x > 0x7f) {
    b[at++] = (x % 128) | 0x80;
    x = Math.floor(x / 128);
  }
  b[at++] = x;
  return at;
}

/** Writes a 64-hex-character hash as its 32 bytes. */
function hexInto(b: Uint8Array, at: number, s: string): number {
  if (s.length !== HEX_HASH) throw new Error("a stored hash is not 64 hex characters");
  b.set(bytesOfHex(s), at);
  return at + RAW_HASH;
}

/** The 32 bytes of a hash packed in the earlier form, as 64 ASCII hex bytes. */
function bytesOfAscii(a: Uint8Array): Uint8Array {
  return bytesOfHex(String.fromCharCode(...a));
}
