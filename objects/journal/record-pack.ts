/**
 * A run of stored records packed into one byte array, for a fork's copy: one structured clone of
 * bytes per Durable Object call instead of thousands of objects. Per record:
 * `[flags][seq varint][fence varint][prev hash: 64 ASCII bytes, unless flags & 1 (genesis)]
 * [hash: 64 ASCII bytes][event length varint][event]`. Hashes stay in their hex form so packing
 * and unpacking convert nothing (a fork copies every record to every child: this runs N × prefix
 * times). Used by worker/fork.ts between a parent and its children; tested in
 * test/node/journal/record-pack.test.ts.
 */
import type { ContentHash } from "../../proto/canon.js";
import type { StoredRecord } from "./journal.js";

const GENESIS = 1;
const HASH = 64;

export function packRecords(records: readonly StoredRecord[]): Uint8Array {
  let size = 0;
  for (const r of records) size += 1 + 9 + 9 + 2 * HASH + 5 + r.event.length;
  const b = new Uint8Array(size);
  let at = 0;
  for (const r of records) {
    b[at++] = r.prevHash === "" ? GENESIS : 0;
    at = varint(b, at, Number(r.seq));
    at = varint(b, at, Number(r.fence));
    if (r.prevHash !== "") at = ascii(b, at, r.prevHash);
    at = ascii(b, at, r.hash);
    at = varint(b, at, r.event.length);
    b.set(r.event, at);
    at += r.event.length;
  }
  return b.subarray(0, at);
}

export function unpackRecords(b: Uint8Array): StoredRecord[] {
  const out: StoredRecord[] = [];
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
  const hash = (): string => {
    if (at + HASH > b.length) throw new Error("packed records end inside a hash");
    const s = String.fromCharCode.apply(null, b.subarray(at, at + HASH) as unknown as number[]);
    at += HASH;
    return s;
  };
  while (at < b.length) {
    const flags = b[at++]!;
    const seq = BigInt(next());
    const fence = BigInt(next());
    const prevHash = (flags & GENESIS ? "" : hash()) as ContentHash;
    const h = hash() as ContentHash;
    const len = next();
    if (at + len > b.length) throw new Error("packed records end inside an event");
    out.push({ seq, prevHash, hash: h, fence, event: b.subarray(at, at + len) });
    at += len;
  }
  return out;
}

/** Seqs, fences and lengths: non-negative and far below 2^53. */
function varint(b: Uint8Array, at: number, v: number): number {
  let x = v;
  while (x > 0x7f) {
    b[at++] = (x % 128) | 0x80;
    x = Math.floor(x / 128);
  }
  b[at++] = x;
  return at;
}

function ascii(b: Uint8Array, at: number, s: string): number {
  if (s.length !== HASH) throw new Error("a stored hash is not 64 hex characters");
  for (let i = 0; i < HASH; i++) b[at++] = s.charCodeAt(i);
  return at;
}
