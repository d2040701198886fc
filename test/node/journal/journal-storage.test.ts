/**
 * How the journal keeps its rows (objects/journal/journal.ts): each hash once, as 32 bytes, with
 * prev_hash derived from the row before; and the session schema's migration 4, which brings a
 * journal stored by an older build (hex text, a prev_hash column) to that form with every record,
 * as served, unchanged.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Journal, JOURNAL_SCHEMA, JOURNAL_SCHEMA_1 } from "../../../objects/journal/journal.js";
import { migrateSession } from "../../../objects/session/schema.js";
import { META_PENDING_COLUMNS, META_PLACEMENT_COLUMN, META_SCHEMA } from "../../../objects/session/meta-store.js";
import { migrate, schemaVersion } from "../../../objects/storage/migrate.js";
import { contentHash, GENESIS_HASH } from "../../../proto/canon.js";
import { type Event, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { createTestDb } from "../support/sqljs-db.js";

function output(text: string): Event {
  return create(EventSchema, {
    executionId: "e1",
    kind: 3,
    body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text } } }] } },
  });
}

describe("journal storage", () => {
  it("append: a row holds its hash as 32 bytes and no prev_hash; reads from any seq give prev_hash and hash in hex", () => {
    const db = createTestDb();
    for (const s of JOURNAL_SCHEMA) db.query(s);
    const journal = new Journal(db);
    const r = journal.append(["a", "b", "c", "d"].map(output), { fence: 0n });
    expect(r.ok).toBe(true);
    const columns = db.query<{ name: string }>("SELECT name FROM pragma_table_info('events')").map((c) => c.name);
    expect(columns).toEqual(["seq", "hash", "fence", "event"]);
    const row = db.query<{ hash: Uint8Array }>("SELECT hash FROM events WHERE seq = 1")[0]!;
    expect(row.hash).toBeInstanceOf(Uint8Array);
    expect(row.hash.length).toBe(32);
    const all = new Journal(db).read(1n, 0n, 100);
    expect(all[0]!.prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < all.length; i++) expect(all[i]!.prevHash).toBe(all[i - 1]!.hash);
    if (r.ok) expect(all.map((x) => x.hash)).toEqual(r.records.map((x) => x.hash));
    // From the middle, and one record at a time.
    expect(new Journal(db).read(3n, 0n, 1)).toEqual([all[2]]);
    expect(new Journal(db).read(2n, 3n, 100)).toEqual(all.slice(1, 3));
    expect(new Journal(db).head()).toEqual({ seq: 4n, hash: all[3]!.hash });
    expect(new Journal(db).verify().ok).toBe(true);
  });

  it("migration 4: a journal an older build stored (hex text, a prev_hash column) reads record for record the same after it, and verifies", () => {
    const db = createTestDb();
    // Schema 3, as the build before this one left it.
    migrate(db, [[...JOURNAL_SCHEMA_1, ...META_SCHEMA], META_PENDING_COLUMNS, META_PLACEMENT_COLUMN], "session");
    expect(schemaVersion(db)).toBe(3);
    let prev: string = GENESIS_HASH;
    const expected: { seq: bigint; prevHash: string; hash: string; fence: bigint; event: Uint8Array }[] = [];
    for (let i = 1; i <= 5; i++) {
      const ev = output(`old ${i}`);
      const hash = contentHash(ev, prev as typeof GENESIS_HASH, BigInt(i));
      const bytes = toBinary(EventSchema, ev);
      db.query("INSERT INTO events (seq, prev_hash, hash, fence, event) VALUES (?, ?, ?, ?, ?)", i, prev, hash, 1, bytes);
      expected.push({ seq: BigInt(i), prevHash: prev, hash, fence: 1n, event: bytes });
      prev = hash;
    }
    migrateSession(db);
    expect(schemaVersion(db)).toBeGreaterThanOrEqual(4);
    const journal = new Journal(db);
    expect(journal.read(1n, 0n, 100)).toEqual(expected);
    expect(journal.verify().ok).toBe(true);
    // And it goes on from there.
    const r = journal.append([output("new")], { fence: 1n });
    expect(r.ok && r.records[0]!.prevHash).toBe(prev);
    expect(new Journal(db).verify().ok).toBe(true);
  });
});
