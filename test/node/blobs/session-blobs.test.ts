/**
 * objects/blobs/session-blobs.ts: the session's index of the blobs its journal names, filled in
 * the append transaction and from a fork child's seeded records; GetBlob and Fork read it.
 */
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { externalizeEvent } from "../../../proto/blob-ref.js";
import { EventKind, EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { SESSION_BLOBS_SCHEMA, SessionBlobs } from "../../../objects/blobs/session-blobs.js";
import { Journal } from "../../../objects/journal/journal.js";
import { JOURNAL_SCHEMA } from "../../../objects/journal/journal.js";
import { createTestDb } from "../support/sqljs-db.js";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

function big(t: string): Event {
  const ev = create(EventSchema, {
    executionId: "e",
    kind: EventKind.EVENT_INPUT,
    body: { case: "message", value: { role: "user", parts: [{ part: { case: "text", value: { text: t } } }] } },
  });
  const r = externalizeEvent(ev, 10, sha);
  if (!r.ok) throw new Error(r.detail);
  return r.event;
}

function setup() {
  const db = createTestDb();
  for (const s of [...JOURNAL_SCHEMA, ...SESSION_BLOBS_SCHEMA]) db.query(s);
  const blobs = new SessionBlobs(db);
  return { db, blobs, journal: new Journal(db) };
}

describe("session blob index", () => {
  it("note: indexes each digest once, at the first seq naming it, and only records that name one", () => {
    const { blobs, journal } = setup();
    expect(blobs.any()).toBe(false);
    const small = create(EventSchema, { executionId: "e", kind: EventKind.EVENT_OUTPUT });
    const r = journal.append([small, big("a".repeat(20)), big("a".repeat(20)), big("b".repeat(30))], {
      fence: 0n,
      mintFence: true,
      project: (recs) => blobs.note(recs),
    });
    expect(r.ok).toBe(true);
    expect(blobs.upTo(0n).map((b) => [b.bytes, b.seq])).toEqual([
      [20, 2n],
      [30, 4n],
    ]);
    expect(blobs.upTo(3n).map((b) => b.bytes)).toEqual([20]);
    expect(blobs.any(1n)).toBe(false);
    expect(blobs.any()).toBe(true);
    expect(blobs.get(sha(new TextEncoder().encode("b".repeat(30))) as never)?.seq).toBe(4n);
  });

  it("any: a session without rows reads the index once however often it is asked; after a note, per seq", () => {
    const { db, journal } = setup();
    let reads = 0;
    const counted = {
      ...db,
      query: ((sql: string, ...params: unknown[]) => (
        (reads += sql.includes("FROM blob_refs") ? 1 : 0), db.query(sql, ...(params as never[]))
      )) as typeof db.query,
    };
    const blobs = new SessionBlobs(counted);
    for (let i = 0; i < 5; i++) expect(blobs.any(BigInt(i + 1))).toBe(false);
    expect(blobs.any()).toBe(false);
    expect(reads).toBe(1);
    const r = journal.append([create(EventSchema, { executionId: "e", kind: EventKind.EVENT_OUTPUT }), big("d".repeat(20))], {
      fence: 0n,
      mintFence: true,
      project: (recs) => blobs.note(recs),
    });
    expect(r.ok).toBe(true);
    expect(blobs.any(1n)).toBe(false);
    expect(blobs.any(2n)).toBe(true);
    expect(blobs.any()).toBe(true);
  });

  it("seed: a fork child's copied prefix fills its index in the seed's transaction", () => {
    const parent = setup();
    parent.journal.append([big("c".repeat(40))], { fence: 0n, mintFence: true });
    const child = setup();
    const r = child.journal.seed(parent.journal.read(1n, 0n, 100), (seeded) => child.blobs.note(seeded));
    expect(r.ok).toBe(true);
    expect(child.blobs.upTo(0n).map((b) => b.bytes)).toEqual([40]);
  });
});
