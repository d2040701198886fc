/** objects/journal/record-pack.ts: records survive packing exactly, genesis link included. */
import { describe, expect, it } from "vitest";
import { packRecords, unpackRecords } from "../../../objects/journal/record-pack.js";
import type { StoredRecord } from "../../../objects/journal/journal.js";
import type { ContentHash } from "../../../proto/canon.js";

const h = (c: string) => c.repeat(64) as ContentHash;

describe("record packing", () => {
  it("pack/unpack: seqs, fences, links, hashes and event bytes of any size round-trip", () => {
    const records: StoredRecord[] = [
      { seq: 1n, prevHash: "" as ContentHash, hash: h("a"), fence: 1n, event: new Uint8Array([1, 2, 3]) },
      { seq: 2n, prevHash: h("a"), hash: h("b"), fence: 300n, event: new Uint8Array(0) },
      { seq: 2n ** 40n, prevHash: h("b"), hash: h("c"), fence: 2n ** 33n, event: new Uint8Array(70_000).fill(7) },
    ];
    expect(unpackRecords(packRecords(records))).toEqual(records);
    expect(unpackRecords(packRecords([]))).toEqual([]);
    expect(() => unpackRecords(packRecords(records).subarray(0, 100))).toThrow();
  });
});
