/** Identifier minting (proto/ids.ts): the formats of docs/contract.md §9 and random bytes handed out once. */
import { describe, expect, it } from "vitest";
import { isSessionUid, mintExecutionId, mintSessionUid, randomHex } from "../../../proto/ids.js";

describe("ids", () => {
  it("session uids and execution ids have the contract's formats", () => {
    for (let i = 0; i < 100; i++) {
      expect(isSessionUid(mintSessionUid())).toBe(true);
      expect(mintExecutionId()).toMatch(/^[0-9a-f]{16}$/);
    }
  });

  it("randomHex: the asked length in lowercase hex, never the same bytes twice across pool refills", () => {
    const seen = new Set<string>();
    // 3,000 draws of 8 bytes use the 4 KiB pool several times over, including draws that straddle a refill.
    for (let i = 0; i < 3_000; i++) {
      const h = randomHex(i % 3 === 0 ? 12 : 8);
      expect(h).toMatch(i % 3 === 0 ? /^[0-9a-f]{24}$/ : /^[0-9a-f]{16}$/);
      expect(seen.has(h)).toBe(false);
      seen.add(h);
    }
    // Every byte value turns up: the hex table covers 0..255 and the bytes are not biased to a few.
    const pairs = new Set([...seen].join("").match(/../g));
    expect(pairs.size).toBe(256);
    expect(() => randomHex(4097)).toThrow(RangeError);
  });
});
