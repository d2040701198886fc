/**
 * objects/journal/record-pack.ts: records survive packing exactly, genesis link included; hashes
 * travel as their 32 bytes, a prev hash that is the record before's is left out, and packs of the
 * earlier form (64 ASCII hex bytes per hash) still unpack. Journal.seedPacked stores a pack only
 * when every record links.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { eachPacked, packRecords, unpackRecords } from "../../../objects/journal/record-pack.js";
import { Journal, JOURNAL_SCHEMA, type StoredRecord } from "../../../objects/journal/journal.js";
import type { ContentHash } from "../../../proto/canon.js";
import { EventKind, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { userText } from "../../../proto/messages.js";
import { createTestDb } from "../support/sqljs-db.js";

const h = (c: string) => c.repeat(64) as ContentHash;

const records: StoredRecord[] = [
  { seq: 1n, prevHash: "" as ContentHash, hash: h("a"), fence: 1n, event: new Uint8Array([1, 2, 3]) },
  { seq: 2n, prevHash: h("a"), hash: h("b"), fence: 300n, event: new Uint8Array(0) },
  { seq: 2n ** 40n, prevHash: h("b"), hash: h("c"), fence: 2n ** 33n, event: new Uint8Array(70_000).fill(7) },
  // A prev hash that is not the record before's is carried whole.
  { seq: 2n ** 40n + 1n, prevHash: h("e"), hash: h("f"), fence: 0n, event: new Uint8Array([9]) },
];

/** The earlier form: every hash as 64 ASCII bytes, every prev hash present (flags 1: genesis). */
function legacyPack(rs: readonly StoredRecord[]): Uint8Array {
  const out: number[] = [];
  const varint = (v: number) => {
    while (v > 0x7f) {
      out.push((v % 128) | 0x80);
      v = Math.floor(v / 128);
    }
    out.push(v);
  };
  for (const r of rs) {
    out.push(r.prevHash === "" ? 1 : 0);
    varint(Number(r.seq));
    varint(Number(r.fence));
    for (const s of r.prevHash === "" ? [r.hash] : [r.prevHash, r.hash]) for (const c of s) out.push(c.charCodeAt(0));
    varint(r.event.length);
    out.push(...r.event);
  }
  return new Uint8Array(out);
}

describe("record packing", () => {
  it("pack/unpack: seqs, fences, links, hashes and event bytes of any size round-trip", () => {
    expect(unpackRecords(packRecords(records))).toEqual(records);
    expect(unpackRecords(packRecords([]))).toEqual([]);
    expect(() => unpackRecords(packRecords(records).subarray(0, 100))).toThrow();
  });

  it("pack: hashes are 32 bytes, and a prev hash that is the record before's is left out", () => {
    const pack = packRecords(records);
    // seq 1: genesis, one hash; seq 2 and 2^40: chained, one hash; the last: both hashes.
    const varints = [1 + 1 + 1, 1 + 2 + 1, 6 + 5 + 3, 6 + 1 + 1];
    const expected = records.reduce((n, r, i) => n + 1 + varints[i]! + (i === 3 ? 64 : 32) + r.event.length, 0);
    expect(pack.length).toBe(expected);
    const seen: number[] = [];
    eachPacked(pack, (r) => {
      seen.push(r.seq);
      // Views into the pack itself, not copies.
      expect(r.event.buffer).toBe(pack.buffer);
      expect(r.hash.buffer).toBe(pack.buffer);
    });
    expect(seen).toEqual(records.map((r) => Number(r.seq)));
  });

  it("unpack: a pack of the earlier form, hashes as 64 ASCII hex bytes, unpacks to the same records", () => {
    expect(unpackRecords(legacyPack(records))).toEqual(records);
    const bad = legacyPack(records.slice(0, 1));
    bad[3] = "G".charCodeAt(0);
    expect(() => unpackRecords(bad)).toThrow(/hex/);
  });

  it("pack: refuses a hash that is not 64 lowercase hex characters", () => {
    expect(() => packRecords([{ ...records[0]!, hash: "A".repeat(64) as ContentHash }])).toThrow(/hex/);
    expect(() => packRecords([{ ...records[0]!, hash: "ab" as ContentHash }])).toThrow(/64/);
  });
});

describe("Journal.seedPacked", () => {
  const newJournal = () => {
    const db = createTestDb();
    for (const s of JOURNAL_SCHEMA) db.query(s);
    return new Journal(db);
  };
  const output = (text: string) => create(EventSchema, { kind: EventKind.EVENT_OUTPUT, executionId: "e", body: { case: "message", value: userText(text) } });

  it("stores a parent's prefix in two packs byte for byte, and the child's own records link after it", () => {
    const parent = newJournal();
    parent.append([output("a"), output("b"), output("c")], { fence: 0n });
    const prefix = parent.read(1n, 0n, 100);
    const child = newJournal();
    const noted: bigint[] = [];
    expect(child.seedPacked(packRecords(prefix.slice(0, 1)), (rs) => noted.push(...rs.map((r) => r.seq)))).toEqual({ ok: true, records: 1 });
    expect(child.seedPacked(packRecords(prefix.slice(1)), (rs) => noted.push(...rs.map((r) => r.seq)))).toEqual({ ok: true, records: 2 });
    expect(noted).toEqual([1n, 2n, 3n]);
    expect(child.read(1n, 0n, 100)).toEqual(prefix);
    expect(child.head()).toEqual({ seq: 3n, hash: prefix[2]!.hash });
    const r = child.append([output("child")], { fence: 0n });
    expect(r.ok && r.records[0]!.prevHash).toBe(prefix[2]!.hash);
    expect(child.verify().ok).toBe(true);
  });

  it("stores nothing when a record does not follow the head or the record before it", () => {
    const parent = newJournal();
    parent.append([output("a"), output("b"), output("c")], { fence: 0n });
    const prefix = parent.read(1n, 0n, 100);
    // Not starting at the head: seq 2 on an empty journal.
    expect(newJournal().seedPacked(packRecords(prefix.slice(1)))).toEqual({ ok: false, reason: "broken_link", seq: 2n });
    // A prev hash that is not the head's.
    const child = newJournal();
    child.seedPacked(packRecords(prefix.slice(0, 1)));
    const forged = { ...prefix[1]!, prevHash: h("d") };
    expect(child.seedPacked(packRecords([forged, prefix[2]!]))).toEqual({ ok: false, reason: "broken_link", seq: 2n });
    // A gap inside the pack: nothing of it is stored.
    expect(child.seedPacked(packRecords([prefix[1]!, { ...prefix[2]!, seq: 4n }]))).toEqual({ ok: false, reason: "broken_link", seq: 4n });
    expect(child.head().seq).toBe(1n);
    expect(child.read(1n, 0n, 100)).toHaveLength(1);
  });
});
