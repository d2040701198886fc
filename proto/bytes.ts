/** Byte helpers shared by the host, the SDK and the CLI. */

/** The parts one after another (the only part itself, uncopied, when there is one). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** The bytes as lowercase hex. */
export function hexOf(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i++) s += HEX[b[i]!];
  return s;
}

/** The bytes written as `s`, lowercase hex with an even number of digits; throws on anything else. */
export function bytesOfHex(s: string): Uint8Array {
  if (s.length % 2 !== 0) throw new Error("hex text has an odd number of digits");
  const out = new Uint8Array(s.length >>> 1);
  for (let i = 0; i < out.length; i++) {
    const hi = nibble(s.charCodeAt(2 * i));
    const lo = nibble(s.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0) throw new Error("hex text holds a character that is not a lowercase hex digit");
    out[i] = (hi << 4) | lo;
  }
  return out;
}

/** The value of a lowercase hex digit's character code, or -1. */
function nibble(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}
