/**
 * The journal's current fence when an append that mints one stores it only in its records
 * (objects/journal/journal.ts `fence`, docs/journal.md "Fences"): every way of changing it, read by
 * the journal that wrote it and by a new Journal over the same database, against the rule the
 * contract states (a fence row that every mint writes).
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Journal, JOURNAL_FENCE_THROUGH, JOURNAL_PACKED_HASHES, JOURNAL_SCHEMA, JOURNAL_SCHEMA_1 } from "../../../objects/journal/journal.js";
import { createTestDb } from "../support/sqljs-db.js";

type Db = ReturnType<typeof createTestDb>;

function newDb(): Db {
  const db = createTestDb();
  for (const s of JOURNAL_SCHEMA) db.query(s);
  return db;
}

function note(text: string): Event {
  return create(EventSchema, {
    executionId: "e1",
    kind: 3,
    body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text } } }] } },
  });
}

function fenceRow(db: Db): { value: number; through_seq: number } | undefined {
  return db.query<{ value: number; through_seq: number }>("SELECT value, through_seq FROM fence WHERE id = 1")[0];
}

/** A small deterministic generator, so a failing case can be run again. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("Journal fences", () => {
  it("an append that mints a fence leaves the row alone, and a new Journal reads the fence from the records", () => {
    const db = newDb();
    const journal = new Journal(db);
    for (let turn = 1; turn <= 3; turn++) {
      const r = journal.append([note(`turn ${turn}`), note("end")], { fence: 0n, mintFence: true });
      expect(r).toMatchObject({ ok: true, fence: BigInt(turn) });
      expect(new Journal(db).fence()).toBe(BigInt(turn));
    }
    expect(fenceRow(db)).toBeUndefined();
    // A writer holding an older fence is refused by a journal that never saw the mints.
    expect(new Journal(db).append([note("stale")], { fence: 2n })).toMatchObject({ ok: false, reason: "fenced", current: 3n });
  });

  it("a standalone mint writes the row through the head; the next minting append goes past it", () => {
    const db = newDb();
    const journal = new Journal(db);
    journal.append([note("a")], { fence: 0n, mintFence: true });
    expect(journal.mintFence()).toBe(2n);
    expect(fenceRow(db)).toEqual({ value: 2, through_seq: 1 });
    expect(journal.append([note("b")], { fence: 0n, mintFence: true })).toMatchObject({ ok: true, fence: 3n });
    expect(new Journal(db).fence()).toBe(3n);
  });

  it("an append under a newer fence than the current one does not make it current, before or after a restart", () => {
    const db = newDb();
    const journal = new Journal(db);
    journal.append([note("a")], { fence: 0n, mintFence: true });
    expect(journal.append([note("b")], { fence: 7n }).ok).toBe(true);
    expect(journal.fence()).toBe(1n);
    expect(new Journal(db).fence()).toBe(1n);
    expect(new Journal(db).mintFence()).toBe(2n);
  });

  it("a seeded prefix's fences are not the child's: its own fence survives a restart in the middle of a fork", () => {
    const parentDb = newDb();
    const parent = new Journal(parentDb);
    for (let i = 0; i < 5; i++) parent.append([note(`p${i}`)], { fence: 0n, mintFence: true });
    const childDb = newDb();
    const child = new Journal(childDb);
    expect(child.mintFence()).toBe(1n);
    expect(child.seed(parent.read(1n, 0n, 100)).ok).toBe(true);
    expect(child.fence()).toBe(1n);
    // The object restarts between the fork's seed and its marker.
    const restarted = new Journal(childDb);
    expect(restarted.fence()).toBe(1n);
    expect(restarted.append([note("fork marker")], { expectedSeq: 5n, fence: restarted.fence() })).toMatchObject({ ok: true, fence: 1n });
    expect(new Journal(childDb).append([note("turn")], { fence: 0n, mintFence: true })).toMatchObject({ ok: true, fence: 2n });
  });

  it("migration 7 keeps the fence a journal had, records under it included", () => {
    const db = createTestDb();
    for (const s of [...JOURNAL_SCHEMA_1, ...JOURNAL_PACKED_HASHES]) db.query(s);
    // A journal as the build before wrote it: the row written by every mint.
    db.query("INSERT INTO fence (id, value) VALUES (1, 4)");
    db.query("INSERT INTO events (seq, hash, fence, event) VALUES (1, zeroblob(32), 9, x'')");
    for (const s of JOURNAL_FENCE_THROUGH) db.query(s);
    expect(fenceRow(db)).toEqual({ value: 4, through_seq: 1 });
    expect(new Journal(db).fence()).toBe(4n);
  });

  it("matches a row written by every mint, across random operations and restarts", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const next = rng(seed);
      const db = newDb();
      let journal = new Journal(db);
      // The contract's rule: mints count up from 0; an append under an older fence is refused.
      let expected = 0n;
      for (let step = 0; step < 60; step++) {
        const pick = next();
        const context = `seed ${seed}, step ${step}`;
        if (pick < 0.3) {
          const r = journal.append([note(`m${step}`), note("end")], { fence: 0n, mintFence: true });
          expected += 1n;
          expect(r, context).toMatchObject({ ok: true, fence: expected });
        } else if (pick < 0.4) {
          expected += 1n;
          expect(journal.mintFence(), context).toBe(expected);
        } else if (pick < 0.6) {
          // Under the current fence, an older one (refused), or a newer one.
          const offset = BigInt(Math.floor(next() * 5)) - 2n;
          const fence = expected + offset < 0n ? 0n : expected + offset;
          const r = journal.append([note(`a${step}`)], { fence });
          expect(r.ok, context).toBe(fence >= expected);
        } else if (pick < 0.65) {
          // A CAS that fails mints nothing.
          const r = journal.append([note(`c${step}`)], { expectedSeq: journal.head().seq + 1n, fence: 0n, mintFence: true });
          expect(r.ok, context).toBe(false);
        } else if (pick < 0.8) {
          journal = new Journal(db);
        }
        expect(journal.fence(), context).toBe(expected);
        expect(new Journal(db).fence(), context).toBe(expected);
      }
    }
  });
});
