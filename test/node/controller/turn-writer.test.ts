/**
 * Staged records (TurnWriter.stage): held back, committed in order with the turn's next append,
 * so the journal is exactly what appending them one by one would have written. A staged opening
 * (TurnWriter.open with `staged`, a sink-only harness): its CAS is checked at once and again by
 * the commit that carries it, which mints the turn's fence; if that commit fails, nothing more of
 * the turn is written.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { AppendRefusedError } from "../../../objects/controller/errors.js";
import { type TurnLog, TurnWriter } from "../../../objects/controller/turn-writer.js";
import { type AppendedRecord, JOURNAL_SCHEMA, Journal } from "../../../objects/journal/journal.js";
import { type Event, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { createTestDb } from "../support/sqljs-db.js";

function output(text: string): Event {
  return create(EventSchema, {
    executionId: "e1",
    kind: 3,
    body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text } } }] } },
  });
}

/** A journal as the controller sees it, counting transactions. */
function journalLog(maxEventBytes?: number) {
  const db = createTestDb();
  for (const s of JOURNAL_SCHEMA) db.query(s);
  const journal = new Journal(db, maxEventBytes);
  let commits = 0;
  const log: TurnLog = {
    append: (events, opts) => {
      commits++;
      return journal.append(events, opts);
    },
    head: () => journal.head(),
    events: (from, to) => journal.read(from, to, 1000).map((r) => fromBinary(EventSchema, r.event)),
    prepare: (events) => journal.prepare(events),
    commit: (prepared, opts) => {
      commits++;
      return journal.commit(prepared, opts);
    },
  };
  return { journal, log, commits: () => commits };
}

function texts(records: readonly AppendedRecord[], log: TurnLog): string[] {
  return log
    .events(records[0]!.seq, records.at(-1)!.seq)
    .map((e) => (e.body.case === "message" && e.body.value.parts[0]?.part.case === "text" ? e.body.value.parts[0].part.value.text : "?"));
}

describe("TurnWriter staging", () => {
  it("commits staged records first, in order, with the next append, in one transaction", () => {
    const staged = journalLog();
    const plain = journalLog();
    const seen: AppendedRecord[] = [];
    const w = new TurnWriter(staged.log, 0n, (r) => seen.push(...r));
    w.stage([output("a")]);
    w.stage([output("b")]);
    expect(staged.journal.head().seq).toBe(0n);
    expect(seen).toHaveLength(0);
    const out = w.append([output("c")]);
    expect(staged.commits()).toBe(1);
    expect(out.map((r) => r.seq)).toEqual([1n, 2n, 3n]);
    expect(seen.map((r) => r.seq)).toEqual([1n, 2n, 3n]);
    expect(texts(out, staged.log)).toEqual(["a", "b", "c"]);

    const p = new TurnWriter(plain.log, 0n, () => {});
    for (const t of ["a", "b", "c"]) p.append([output(t)]);
    expect(plain.commits()).toBe(3);
    // Same chain, byte for byte: staging changes only the number of transactions.
    expect(staged.journal.head().hash).toBe(plain.journal.head().hash);
  });

  it("flush commits what is staged and nothing when nothing is", () => {
    const { journal, log, commits } = journalLog();
    const w = new TurnWriter(log, 0n, () => {});
    w.flush();
    expect(commits()).toBe(0);
    w.stage([output("x")]);
    w.flush();
    expect(commits()).toBe(1);
    expect(journal.head().seq).toBe(1n);
    w.flush();
    expect(commits()).toBe(1);
  });

  it("refuses an event that could not be stored when it is staged, not later", () => {
    const { journal, log } = journalLog(64);
    const w = new TurnWriter(log, 0n, () => {});
    expect(() => w.stage([output("y".repeat(500))])).toThrow(AppendRefusedError);
    w.stage([output("ok")]);
    w.flush();
    expect(journal.head().seq).toBe(1n);
  });

  it("appends at once when the log cannot stage", () => {
    const { journal, log } = journalLog();
    const w = new TurnWriter({ append: log.append, head: log.head, events: log.events }, 0n, () => {});
    w.stage([output("now")]);
    expect(journal.head().seq).toBe(1n);
  });

  it("a staged batch is refused whole under a newer fence", () => {
    const { journal, log } = journalLog();
    const w = new TurnWriter(log, 0n, () => {});
    w.stage([output("a")]);
    const newer = journal.append([output("other")], { fence: 0n, mintFence: true });
    expect(newer.ok).toBe(true);
    expect(() => w.append([output("b")])).toThrow(AppendRefusedError);
    expect(journal.head().seq).toBe(1n);
  });
});

describe("TurnWriter: a staged opening", () => {
  it("commits with the turn's next append: one transaction, the CAS carried, the fence minted, the chain as if opened at once", () => {
    const staged = journalLog();
    const plain = journalLog();
    for (const j of [staged, plain]) j.journal.append([output("before")], { fence: 0n, mintFence: true });
    const seen: AppendedRecord[] = [];
    const w = new TurnWriter(staged.log, 0n, (r) => seen.push(...r));
    expect(w.open([output("start"), output("input")], 1n, true)).toEqual({ ok: true });
    w.stage([output("answer")]);
    expect(staged.journal.head().seq).toBe(1n);
    expect(seen).toHaveLength(0);
    const out = w.append([output("end")]);
    expect(staged.commits()).toBe(1);
    expect(texts(out, staged.log)).toEqual(["start", "input", "answer", "end"]);
    expect(seen.map((r) => r.seq)).toEqual([2n, 3n, 4n, 5n]);
    expect(w.fence).toBe(2n);
    expect(out.every((r) => r.fence === 2n)).toBe(true);

    const p = new TurnWriter(plain.log, 0n, () => {});
    expect(p.open([output("start"), output("input")], 1n).ok).toBe(true);
    p.append([output("answer")]);
    p.append([output("end")]);
    expect(p.fence).toBe(2n);
    expect(staged.journal.head().hash).toBe(plain.journal.head().hash);
  });

  it("a head other than the CAS, or a record too large, is refused at open: nothing staged, nothing written", () => {
    const { journal, log } = journalLog(64);
    const w = new TurnWriter(log, 0n, () => {});
    expect(w.open([output("start")], 3n, true)).toEqual({ ok: false, reason: "conflict", head: 0n, expected: 3n });
    expect(w.open([output("y".repeat(500))], undefined, true)).toMatchObject({ ok: false, reason: "too_large" });
    w.flush();
    expect(journal.head().seq).toBe(0n);
  });

  it("a writer that moved the head before the first commit: that commit is refused, and so is everything after it (no ERROR alone)", () => {
    const { journal, log } = journalLog();
    const w = new TurnWriter(log, 0n, () => {});
    expect(w.open([output("start")], 0n, true).ok).toBe(true);
    expect(journal.append([output("other")], { fence: 0n, mintFence: true }).ok).toBe(true);
    expect(() => w.append([output("end")])).toThrow(AppendRefusedError);
    expect(() => w.append([output("error")])).toThrow(/seq conflict/);
    expect(() => w.stage([output("late")])).toThrow(AppendRefusedError);
    expect(() => w.flush()).toThrow(AppendRefusedError);
    expect(log.events(1n, 0n).map((e) => e.body.case === "message" && e.body.value.parts[0]?.part.value)).toEqual(
      [{ text: "other" }].map((t) => expect.objectContaining(t)),
    );
  });

  it("a storage fault in the first commit stops the turn: the fault again on every later write, nothing written", () => {
    const { journal, log } = journalLog();
    let faults = 1;
    const faulty: TurnLog = {
      ...log,
      commit: (prepared, opts) => {
        if (faults-- > 0) throw new Error("disk I/O error");
        return log.commit!(prepared, opts);
      },
    };
    const w = new TurnWriter(faulty, 0n, () => {});
    expect(w.open([output("start")], undefined, true).ok).toBe(true);
    expect(() => w.append([output("end")])).toThrow("disk I/O error");
    expect(() => w.append([output("error")])).toThrow("disk I/O error");
    expect(journal.head().seq).toBe(0n);
  });
});
