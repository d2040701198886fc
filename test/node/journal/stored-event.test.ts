/**
 * Short rows (objects/journal/stored-event.ts): a record stored without its execution id reads
 * back whole, from any range, after any restart, fork or failed transaction; nothing else changes.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Journal, JOURNAL_SCHEMA } from "../../../objects/journal/journal.js";
import { idFieldEnd, shortForm } from "../../../objects/journal/stored-event.js";
import { packRecords } from "../../../objects/journal/record-pack.js";
import { createTestDb, type TestDb } from "../support/sqljs-db.js";

function newDb(): TestDb {
  const db = createTestDb();
  for (const s of JOURNAL_SCHEMA) db.query(s);
  return db;
}

/** `ts` null: an event with no time. */
function output(text: string, executionId: string, ts: { seconds: bigint; nanos: number } | null = { seconds: 1_700_000_000n, nanos: 0 }): Event {
  return create(EventSchema, {
    executionId,
    kind: 3,
    ts: ts ?? undefined,
    body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text } } }] } },
  });
}

function storedRows(db: TestDb): { seq: number; event: Uint8Array }[] {
  return db.query<{ seq: number; event: Uint8Array }>("SELECT seq, event FROM events ORDER BY seq");
}

/** A small seeded PRNG (mulberry32), so a failure names its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Mostly milliseconds near one another, some with nanoseconds below them, some none or far off. */
function randomTime(rnd: () => number): { seconds: bigint; nanos: number } | null {
  const r = rnd();
  if (r < 0.1) return null;
  const ms = r < 0.8 ? 1_700_000_000_000 + Math.floor(rnd() * 5000) : Math.floor(rnd() * 2 ** 41);
  const sub = rnd() < 0.15 ? Math.floor(rnd() * 1_000_000) : 0;
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 + sub };
}

describe("stored events", () => {
  it("append: a turn's records after the first of its execution are stored without the id, and read back whole", () => {
    const db = newDb();
    const journal = new Journal(db);
    const id = "0123456789abcdef";
    const events = ["start", "input", "call", "output", "end"].map((t) => output(t, id));
    const r = journal.append(events, { fence: 0n });
    expect(r.ok).toBe(true);
    const rows = storedRows(db);
    expect(rows.map((x) => shortForm(x.event)?.distance)).toEqual([undefined, 1, 2, 3, 4]);
    const whole = events.map((e) => toBinary(EventSchema, e));
    // 18 bytes of id and 8 of time out; marker, distance and time offset in.
    expect(rows.map((x, i) => whole[i]!.length - x.event.length)).toEqual([0, 23, 23, 23, 23]);
    expect(journal.read(1n, 0n, 10).map((x) => x.event)).toEqual(whole);
    expect(journal.read(3n, 4n, 10).map((x) => x.event)).toEqual(whole.slice(2, 4));
    expect(journal.verify()).toMatchObject({ ok: true, records: 5n });
  });

  it("append: a time lent as milliseconds from the lender's, before or after it; one the lender cannot give keeps its own", () => {
    const db = newDb();
    const journal = new Journal(db);
    const id = "0123456789abcdef";
    const at = (seconds: number, nanos: number) => ({ seconds: BigInt(seconds), nanos });
    const times = [
      at(1_700_000_000, 5_000_000), // the lender
      at(1_700_000_000, 9_000_000), // 4 ms later
      at(1_700_000_001, 0), // into the next second
      at(1_699_999_999, 995_000_000), // before the lender
      at(1_700_000_000, 5_000_001), // below a millisecond apart: the time is its own
      null, // no time
      at(0, 5_000_000), // the epoch's second
      at(1_700_003_600, 5_000_000), // an hour later
      at(253_402_300_799, 999_000_000), // the last millisecond a Timestamp holds
    ];
    // The same again from a lender with nanoseconds below the millisecond: a time with the same ones is lent.
    times.push(...[at(1_700_000_000, 5_000_123), at(1_700_000_000, 9_000_123), at(1_700_000_000, 9_000_124)]);
    const events = times.map((ts, i) => output(`m${i}`, i < 9 ? id : "fedcba9876543210", ts));
    expect(journal.append(events, { fence: 0n }).ok).toBe(true);
    const forms = storedRows(db).map((x) => shortForm(x.event));
    expect(forms.map((f) => f && (f.lendsTime ? f.delta : "id only"))).toEqual([
      undefined,
      4,
      995,
      -10,
      "id only",
      "id only",
      -1_700_000_000_000,
      3_600_000,
      251_702_300_799_994,
      undefined,
      4,
      "id only",
    ]);
    expect(journal.read(1n, 0n, 20).map((x) => x.event)).toEqual(events.map((e) => toBinary(EventSchema, e)));
    expect(journal.read(4n, 12n, 10).map((x) => x.event)).toEqual(events.slice(3).map((e) => toBinary(EventSchema, e)));
    expect(journal.verify().ok).toBe(true);
  });

  it("append: a lender with no time lends only its id", () => {
    const db = newDb();
    const journal = new Journal(db);
    const events = [output("a", "abcdefgh", null), output("b", "abcdefgh")];
    expect(journal.append(events, { fence: 0n }).ok).toBe(true);
    expect(storedRows(db).map((x) => shortForm(x.event)?.lendsTime)).toEqual([undefined, false]);
    expect(journal.read(1n, 0n, 10).map((x) => x.event)).toEqual(events.map((e) => toBinary(EventSchema, e)));
  });

  it("append: events without an execution id, and a new Journal's first record of an execution, are stored whole", () => {
    const db = newDb();
    new Journal(db).append([output("a", ""), output("b", "x1"), output("c", "x1")], { fence: 0n });
    // An object that starts again does not know where x1 is stored whole: it stores it whole once more.
    new Journal(db).append([output("d", "x1"), output("e", "x1")], { fence: 0n });
    expect(storedRows(db).map((x) => shortForm(x.event)?.distance)).toEqual([undefined, undefined, 1, undefined, 1]);
    expect(idFieldEnd(storedRows(db)[0]!.event)).toBe(0);
  });

  it("append: a rolled-back transaction's rows are never pointed at", () => {
    const db = newDb();
    const journal = new Journal(db);
    journal.append([output("a", "aaaaaaaa")], { fence: 0n });
    // Stores x at seq 2 whole, then fails: seq 2 is not written.
    expect(() =>
      journal.append([output("b", "xxxxxxxx"), output("c", "yyyyyyyy")], {
        fence: 0n,
        project: () => {
          throw new Error("projection fault");
        },
      }),
    ).toThrow("projection fault");
    const again = [output("d", "zzzzzzzz"), output("e", "xxxxxxxx")];
    expect(journal.append(again, { fence: 0n }).ok).toBe(true);
    expect(journal.read(2n, 3n, 10).map((x) => x.event)).toEqual(again.map((e) => toBinary(EventSchema, e)));
    expect(journal.verify().ok).toBe(true);

    // The same for a fork child's copy that fails.
    const parent = new Journal(newDb());
    parent.append([output("f", "xxxxxxxx"), output("g", "yyyyyyyy")], { fence: 0n });
    const child = new Journal(newDb());
    const fault = () => {
      throw new Error("projection fault");
    };
    expect(() => child.seedPacked(packRecords(parent.read(1n, 0n, 10)), fault)).toThrow("projection fault");
    const own = [output("h", "zzzzzzzz"), output("i", "xxxxxxxx")];
    expect(child.append(own, { fence: 0n }).ok).toBe(true);
    expect(child.read(1n, 0n, 10).map((x) => x.event)).toEqual(own.map((e) => toBinary(EventSchema, e)));
  });

  it("read: a short row whose whole row lost its id is served as stored, and verify fails at the whole row, never with a guessed id", () => {
    const db = newDb();
    const journal = new Journal(db);
    journal.append([output("a", "abcdefgh"), output("b", "abcdefgh")], { fence: 0n });
    const short = storedRows(db)[1]!.event;
    db.query("UPDATE events SET event = ? WHERE seq = 1", toBinary(EventSchema, output("a", "")));
    expect(journal.read(2n, 2n, 1)[0]!.event).toEqual(short);
    expect(journal.verify()).toMatchObject({ ok: false, firstBadSeq: 1n });
  });

  it("random journals: every range reads back the bytes appended, across restarts, failed appends, forks and long executions", () => {
    for (let seed = 1; seed <= 16; seed++) {
      const rnd = prng(seed);
      const db = newDb();
      let journal = new Journal(db);
      const appended: Uint8Array[] = [];
      // More ids than the writer remembers, some long-lived, one empty.
      const ids = ["", ...Array.from({ length: 12 }, (_, i) => `${i.toString(16)}`.repeat(1 + (i % 16)))];
      let current = ids[1]!;
      for (let step = 0; step < 40; step++) {
        const roll = rnd();
        if (roll < 0.08) journal = new Journal(db);
        else if (roll < 0.14) {
          expect(() =>
            journal.append([output("lost", ids[1 + Math.floor(rnd() * 12)]!)], {
              fence: 0n,
              project: () => {
                throw new Error("fault");
              },
            }),
          ).toThrow("fault");
        } else {
          if (rnd() < 0.3) current = ids[Math.floor(rnd() * ids.length)]!;
          const n = 1 + Math.floor(rnd() * (rnd() < 0.1 ? 300 : 8));
          const batch = Array.from({ length: n }, (_, i) =>
            output(`s${seed}-${step}-${i}`, rnd() < 0.15 ? ids[Math.floor(rnd() * ids.length)]! : current, randomTime(rnd)),
          );
          const r = journal.append(batch, { fence: 0n });
          expect(r.ok).toBe(true);
          for (const e of batch) appended.push(toBinary(EventSchema, e));
        }
      }
      const head = appended.length;
      for (let k = 0; k < 20; k++) {
        const from = 1 + Math.floor(rnd() * head);
        const to = from + Math.floor(rnd() * (head - from + 1));
        const limit = 1 + Math.floor(rnd() * 200);
        const got = journal.read(BigInt(from), BigInt(to), limit).map((x) => x.event);
        expect(got, `seed ${seed} read ${from}..${to} limit ${limit}`).toEqual(appended.slice(from - 1, Math.min(to, from - 1 + limit)));
        // Replay's columns: a short row's lent field and its rest, which together are the event.
        const columns = journal.readColumns(BigInt(from), BigInt(to), limit).map((x) => Uint8Array.from([...(x.eventHead ?? []), ...x.event]));
        expect(columns, `seed ${seed} columns ${from}..${to} limit ${limit}`).toEqual(got);
      }
      expect(journal.verify().ok, `seed ${seed}`).toBe(true);
      const stored = storedRows(db);
      expect(
        stored.some((x) => shortForm(x.event) !== undefined),
        `seed ${seed}`,
      ).toBe(true);

      // A fork child of a random prefix stores its own short rows and reads the same bytes.
      const at = 1 + Math.floor(rnd() * head);
      const child = newDb();
      const cj = new Journal(child);
      expect(cj.seedPacked(packRecords(journal.read(1n, BigInt(at), at))).ok).toBe(true);
      expect(
        new Journal(child).read(1n, 0n, head).map((x) => x.event),
        `seed ${seed} fork at ${at}`,
      ).toEqual(appended.slice(0, at));
    }
  });
});
