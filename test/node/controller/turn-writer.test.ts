/**
 * Staged records (TurnWriter.stage): held back, committed in order with the turn's next append,
 * so the journal is exactly what appending them one by one would have written.
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
