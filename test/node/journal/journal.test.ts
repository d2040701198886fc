/**
 * The journal on real SQLite (sql.js): CAS, fences, the chain, verbatim reads, verification.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { contentHash } from "../../../proto/canon.js";
import { EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Journal, JOURNAL_SCHEMA } from "../../../objects/journal/journal.js";
import { createTestDb } from "../support/sqljs-db.js";

function newJournal(maxEventBytes?: number) {
  const db = createTestDb();
  for (const s of JOURNAL_SCHEMA) db.query(s);
  return { db, journal: new Journal(db, maxEventBytes) };
}

function output(text: string, executionId = "e1"): Event {
  return create(EventSchema, {
    executionId,
    kind: 3,
    body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text } } }] } },
  });
}

function count(db: ReturnType<typeof createTestDb>): number {
  return Number(db.query<{ n: number }>("SELECT count(*) AS n FROM events")[0]!.n);
}

describe("Journal", () => {
  it("append: links each record to the previous hash and stores the canonical hash", () => {
    const { journal } = newJournal();
    const r = journal.append([output("a"), output("b"), output("c")], { fence: 0n });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.records.map((x) => x.seq)).toEqual([1n, 2n, 3n]);
    expect(r.records[0]!.prevHash).toBe("");
    expect(r.records[1]!.prevHash).toBe(r.records[0]!.hash);
    for (const rec of r.records) {
      expect(rec.hash).toBe(contentHash(fromBinary(EventSchema, rec.event), rec.prevHash, rec.seq));
    }
    expect(journal.head()).toEqual({ seq: 3n, hash: r.records[2]!.hash });
  });

  it("append: a batch of any size (one INSERT per 25 rows) stores what appending one by one stores", () => {
    const batched = newJournal();
    const single = newJournal();
    const events = Array.from({ length: 61 }, (_, i) => output(`m${i}`));
    for (const n of [1, 25, 26, 9]) {
      const at = Number(batched.journal.head().seq);
      const r = batched.journal.append(events.slice(at, at + n), { fence: 0n });
      expect(r.ok && r.records.length).toBe(n);
    }
    for (const e of events) expect(single.journal.append([e], { fence: 0n }).ok).toBe(true);
    const rows = (j: ReturnType<typeof newJournal>) => j.db.query("SELECT seq, hash, fence, event FROM events ORDER BY seq");
    expect(rows(batched)).toHaveLength(61);
    expect(rows(batched)).toEqual(rows(single));
    expect(batched.journal.verify().ok).toBe(true);
  });

  it("append: unknown fields at any depth are not stored, hashed or served, and the caller's event is untouched", () => {
    const { journal } = newJournal();
    const ev = output("hi");
    // Field 99 inside the message part (two messages down), as decoding a newer peer's bytes keeps it.
    const part = ev.body.case === "message" ? ev.body.value.parts[0]! : undefined;
    (part as unknown as { $unknown: unknown }).$unknown = [{ no: 99, wireType: 2, data: Uint8Array.of(2, 104, 105) }];
    const withUnknown = fromBinary(EventSchema, toBinary(EventSchema, ev));
    const r = journal.append([withUnknown], { fence: 0n });
    expect(r.ok).toBe(true);
    const rec = r.ok ? r.records[0]! : undefined;
    expect(rec!.event).toEqual(toBinary(EventSchema, output("hi")));
    expect(rec!.hash).toBe(contentHash(output("hi"), rec!.prevHash, 1n));
    const kept = withUnknown.body.case === "message" ? withUnknown.body.value.parts[0] : undefined;
    expect((kept as unknown as { $unknown?: unknown[] }).$unknown).toHaveLength(1);
  });

  it("append: a lone surrogate, which UTF-8 cannot hold, is journaled as U+FFFD: stored, hashed and handed back alike", () => {
    const { journal } = newJournal();
    // A text cut between the halves of a pair, and two map keys that become one.
    const cut = output("cut \ud83d here");
    const params = create(EventSchema, {
      executionId: "e1",
      kind: 2,
      body: { case: "model", value: { model: "m", params: { "k\ud800": "first", "k\udbff": "second \udc00" }, inputHash: "ab".repeat(32) } },
    });
    const r = journal.append([cut, params], { fence: 0n });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const [a, b] = r.records;
    expect(a!.decoded).toEqual(fromBinary(EventSchema, a!.event));
    expect(a!.decoded.body.case === "message" && a!.decoded.body.value.parts[0]!.part.value).toMatchObject({ text: "cut \ufffd here" });
    expect(a!.hash).toBe(contentHash(output("cut \ufffd here"), "", 1n));
    // The keys merge as any decoder merges them: the last one wins.
    expect(b!.decoded.body.case === "model" && b!.decoded.body.value.params).toEqual({ "k\ufffd": "second \ufffd" });
    expect(b!.hash).toBe(contentHash(fromBinary(EventSchema, b!.event), a!.hash, 2n));
    expect(journal.verify()).toMatchObject({ ok: true, records: 2n });
    // The caller's events are untouched.
    expect(cut.body.case === "message" && cut.body.value.parts[0]!.part.value).toMatchObject({ text: "cut \ud83d here" });
  });

  it("append: rejects a stale expected seq with a conflict and writes nothing", () => {
    const { db, journal } = newJournal();
    expect(journal.append([output("a")], { expectedSeq: 0n, fence: 0n }).ok).toBe(true);
    const stale = journal.append([output("b"), output("c")], { expectedSeq: 0n, fence: 0n });
    expect(stale).toMatchObject({ ok: false, reason: "conflict", head: 1n, expected: 0n });
    expect(count(db)).toBe(1);
    expect(journal.append([output("b")], { expectedSeq: 1n, fence: 0n }).ok).toBe(true);
  });

  it("append: rejects a stale fence once a newer one is minted; the new fence appends", () => {
    const { db, journal } = newJournal();
    const f1 = journal.mintFence();
    const f2 = journal.mintFence();
    expect(f2).toBe(f1 + 1n);
    expect(journal.append([output("a")], { fence: f1 })).toMatchObject({ ok: false, reason: "fenced", current: f2 });
    expect(count(db)).toBe(0);
    expect(journal.append([output("a")], { fence: f2 }).ok).toBe(true);
  });

  it("append: minting a fence with the first append is atomic with it (a refused CAS mints nothing)", () => {
    const { journal } = newJournal();
    journal.append([output("a")], { fence: 0n });
    const refused = journal.append([output("b")], { expectedSeq: 0n, fence: 0n, mintFence: true });
    expect(refused.ok).toBe(false);
    expect(journal.fence()).toBe(0n);
    const ok = journal.append([output("b")], { expectedSeq: 1n, fence: 0n, mintFence: true });
    expect(ok).toMatchObject({ ok: true, fence: 1n });
    expect(journal.fence()).toBe(1n);
  });

  it("append: an event over the size limit is refused before anything is written", () => {
    const { db, journal } = newJournal(1000);
    const r = journal.append([output("small"), output("x".repeat(2000))], { fence: 0n });
    expect(r).toMatchObject({ ok: false, reason: "too_large", index: 1 });
    expect(count(db)).toBe(0);
  });

  it("append: an event with no canonical JSON form (NaN in a Struct) is refused and nothing is written", () => {
    const { db, journal } = newJournal();
    const bad = create(EventSchema, {
      kind: 4,
      body: {
        case: "tool",
        value: { id: "c", args: { fields: { x: { kind: { case: "numberValue", value: Number.NaN } } } } },
      },
    });
    const r = journal.append([output("fine"), bad], { fence: 0n });
    expect(r).toMatchObject({ ok: false, reason: "invalid_event", index: 1 });
    expect(count(db)).toBe(0);
    expect(journal.head().seq).toBe(0n);
  });

  it("append: a throw inside the projection rolls the whole batch back", () => {
    const { db, journal } = newJournal();
    expect(() =>
      journal.append([output("a"), output("b")], {
        fence: 0n,
        project: () => {
          throw new Error("projection failed");
        },
      }),
    ).toThrow("projection failed");
    expect(count(db)).toBe(0);
    expect(journal.head().seq).toBe(0n);
    expect(journal.append([output("a")], { expectedSeq: 0n, fence: 0n }).ok).toBe(true);
  });

  it("read: returns stored rows verbatim within bounds; to = 0 means head", () => {
    const { journal } = newJournal();
    const r = journal.append([output("a"), output("b"), output("c"), output("d")], { fence: 0n });
    if (!r.ok) throw new Error("append failed");
    const mid = journal.read(2n, 3n, 100);
    expect(mid.map((x) => x.seq)).toEqual([2n, 3n]);
    expect(mid[0]!.event).toEqual(r.records[1]!.event);
    expect(journal.read(0n, 0n, 100)).toHaveLength(4);
    expect(journal.read(3n, 0n, 1).map((x) => x.seq)).toEqual([3n]);
    expect(journal.read(5n, 0n, 100)).toEqual([]);
  });

  it("verify: an intact chain verifies; an edited event fails at its seq", () => {
    const { db, journal } = newJournal();
    journal.append([output("a"), output("b"), output("c")], { fence: 0n });
    expect(journal.verify()).toMatchObject({ ok: true, records: 3n, firstBadSeq: 0n });
    const tampered = fromBinary(EventSchema, journal.read(2n, 2n, 1)[0]!.event);
    const replacement = output("B").body;
    if (tampered.body.case === "message" && replacement.case === "message") tampered.body.value.parts = replacement.value.parts;
    db.query("UPDATE events SET event = ? WHERE seq = 2", toBinary(EventSchema, tampered));
    expect(journal.verify()).toMatchObject({ ok: false, firstBadSeq: 2n });
  });

  it("verify: any single flipped byte in a stored event or hash breaks the chain at that record", () => {
    const { db, journal } = newJournal();
    journal.append([output("alpha"), output("beta"), output("gamma")], { fence: 0n });
    const rows = db.query<{ seq: number; event: Uint8Array; hash: string }>("SELECT seq, event, hash FROM events");
    for (const row of rows) {
      for (let i = 0; i < row.event.length; i++) {
        const flipped = row.event.slice();
        flipped[i]! ^= 0x01;
        db.query("UPDATE events SET event = ? WHERE seq = ?", flipped, row.seq);
        const rep = journal.verify();
        expect(rep.ok, `byte ${i} of seq ${row.seq}`).toBe(false);
        expect(rep.firstBadSeq).toBe(BigInt(row.seq));
        db.query("UPDATE events SET event = ? WHERE seq = ?", row.event, row.seq);
      }
      const badHash = (row.hash[0] === "0" ? "1" : "0") + row.hash.slice(1);
      db.query("UPDATE events SET hash = ? WHERE seq = ?", badHash, row.seq);
      expect(journal.verify().firstBadSeq).toBe(BigInt(row.seq));
      db.query("UPDATE events SET hash = ? WHERE seq = ?", row.hash, row.seq);
    }
    expect(journal.verify().ok).toBe(true);
  });

  it("verify: a deleted middle record is a gap at the next seq", () => {
    const { db, journal } = newJournal();
    journal.append([output("a"), output("b"), output("c")], { fence: 0n });
    db.query("DELETE FROM events WHERE seq = 2");
    expect(journal.verify()).toMatchObject({ ok: false, firstBadSeq: 3n });
  });

  it("seed: copies a prefix verbatim so the next record links to the copied head", () => {
    const parent = newJournal();
    parent.journal.append([output("a"), output("b")], { fence: 0n });
    const prefix = parent.journal.read(1n, 0n, 100);
    const child = newJournal();
    expect(child.journal.seed(prefix)).toEqual({ ok: true });
    const r = child.journal.append([output("child")], { fence: 0n });
    if (!r.ok) throw new Error("append failed");
    expect(r.records[0]!.prevHash).toBe(prefix[1]!.hash);
    expect(child.journal.verify().ok).toBe(true);
    expect(newJournal().journal.seed([prefix[1]!])).toMatchObject({ ok: false, reason: "broken_link" });
  });

  it("head: survives a new Journal over the same database (nothing lives only in memory)", () => {
    const { db, journal } = newJournal();
    journal.append([output("a")], { fence: 0n, mintFence: true });
    const reopened = new Journal(db);
    expect(reopened.head()).toEqual(journal.head());
    expect(reopened.fence()).toBe(1n);
  });
});
