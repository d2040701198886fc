/**
 * The fuzz suite's deterministic randomness: mulberry32, seeded from FUZZ_SEED (default 1). Every
 * case draws from its own generator derived from (seed, case index), so a failure names a seed and
 * a case and the same bytes come back on the next run, whatever the concurrency did.
 * Imported by the other modules of test/node/fuzz.
 */

export class Rng {
  private _s: number;

  constructor(seed: number) {
    this._s = seed >>> 0;
  }

  /** A generator for one case: independent of how many draws earlier cases made. */
  static forCase(seed: number, index: number): Rng {
    return new Rng(Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b));
  }

  /** Uniform in [0, 1). */
  next(): number {
    let t = (this._s = (this._s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** Picks by weight: `[[weight, value], ...]`. */
  weighted<T>(items: readonly (readonly [number, T])[]): T {
    let r = this.next() * items.reduce((a, [w]) => a + w, 0);
    for (const [w, v] of items) {
      r -= w;
      if (r < 0) return v;
    }
    return items[items.length - 1]![1];
  }

  bytes(n: number): Uint8Array {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = this.int(256);
    return b;
  }

  hex(n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += "0123456789abcdef"[this.int(16)];
    return s;
  }

  /** A short printable string, sometimes with characters JSON and SQL treat specially. */
  word(max = 12): string {
    const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_ .'\"\\%/\u00e9\u2028\u{1F600}";
    let s = "";
    const n = this.int(max + 1);
    for (let i = 0; i < n; i++) s += [...alphabet][this.int([...alphabet].length)];
    return s;
  }
}

export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got ${JSON.stringify(v)}`);
  return n;
}
