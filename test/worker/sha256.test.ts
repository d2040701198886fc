/**
 * proto/sha256.ts inside workerd: its states come from the native hash handle (the speed path),
 * and they hash exactly as createHash does, copies included, on inputs of every length around
 * SHA-256's 64-byte blocks. The journal's content hash and a model call's input hash use them.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SHA256_DIRECT, sha256State } from "../../proto/sha256.js";
import { sha256Hex } from "../../proto/canon.js";

/** Deterministic bytes: a small linear congruential generator. */
function bytesOf(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

const hex = (b: Uint8Array) => Array.from(b, (v) => v.toString(16).padStart(2, "0")).join("");

describe("sha256 in workerd", () => {
  it("takes the native handle: the probe passed on this workerd", () => {
    expect(SHA256_DIRECT).toBe(true);
  });

  it("digests what createHash digests, for every length from 0 to 300 bytes and a few large ones", () => {
    for (const n of [...Array.from({ length: 301 }, (_, i) => i), 4096, 65_537, 1_000_000]) {
      const data = bytesOf(n, n + 1);
      const h = sha256State();
      h.update(data);
      expect(hex(h.digest())).toBe(createHash("sha256").update(data).digest("hex"));
      expect(sha256Hex(data)).toBe(createHash("sha256").update(data).digest("hex"));
    }
  });

  it("a copy continues on its own: both sides of a fork give the digest of their own bytes", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const prefix = bytesOf(seed * 7, seed);
      const left = bytesOf(seed * 3, seed + 1000);
      const right = bytesOf(seed * 5, seed + 2000);
      const a = sha256State();
      a.update(prefix);
      const b = a.copy();
      a.update(left);
      b.update(right);
      const c = b.copy();
      expect(hex(a.digest())).toBe(createHash("sha256").update(prefix).update(left).digest("hex"));
      expect(hex(b.digest())).toBe(createHash("sha256").update(prefix).update(right).digest("hex"));
      expect(hex(c.digest())).toBe(createHash("sha256").update(prefix).update(right).digest("hex"));
    }
  });

  it("text hashes as its UTF-8 bytes", () => {
    for (const s of ["", "abc", "é — 𝄞 ✓", "x".repeat(10_000)])
      expect(sha256Hex(s)).toBe(createHash("sha256").update(new TextEncoder().encode(s)).digest("hex"));
  });
});
