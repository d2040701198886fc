/**
 * The fan-out point (objects/session/followers.ts) over a real journal on sql.js: catch-up then
 * live, exactly once and in order, one encoding per commit, deltas after the last record, the
 * queue bound, heartbeats and the idle limit on a fake clock.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { type TailResponse, TailEnd_Reason, TailResponseSchema } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Journal, JOURNAL_SCHEMA } from "../../../objects/journal/journal.js";
import { type FollowClock, type FollowLimits, Followers } from "../../../objects/session/followers.js";
import { createTestDb } from "../support/sqljs-db.js";

function output(text: string): Event {
  return create(EventSchema, {
    executionId: "e1",
    kind: 3,
    body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text } } }] } },
  });
}

class FakeClock implements FollowClock {
  t = 0;
  private _timers: { at: number; fn: () => void }[] = [];
  now = () => this.t;
  setTimer = (fn: () => void, ms: number) => {
    const h = { at: this.t + ms, fn };
    this._timers.push(h);
    return h;
  };
  clearTimer = (h: unknown) => {
    this._timers = this._timers.filter((x) => x !== h);
  };
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this._timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this._timers = this._timers.filter((x) => x !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
  }
  get pending(): number {
    return this._timers.length;
  }
}

function setup(limits: Partial<FollowLimits> = {}) {
  const db = createTestDb();
  for (const s of JOURNAL_SCHEMA) db.query(s);
  const journal = new Journal(db);
  const clock = new FakeClock();
  const followers = new Followers(() => journal, { heartbeatMs: 1000, idleLimitMs: 10_000, maxQueueBytes: 1 << 20, ...limits }, clock);
  const commit = (...texts: string[]) => {
    const r = journal.append(texts.map(output), { fence: 0n });
    if (!r.ok) throw new Error(r.reason);
    followers.committed(r.records);
    return r.records;
  };
  return { journal, clock, followers, commit };
}

/** Reads items from a follower stream, one envelope at a time. */
function reader(stream: ReadableStream<Uint8Array>) {
  const r = stream.getReader();
  let buf = new Uint8Array(0);
  const items: TailResponse[] = [];
  let closed = false;
  return {
    items,
    get closed() {
      return closed;
    },
    /** Reads one chunk (or the close) and splits it. */
    async pull(): Promise<void> {
      const { done, value } = await r.read();
      if (done) {
        closed = true;
        return;
      }
      const joined = new Uint8Array(buf.length + value.length);
      joined.set(buf);
      joined.set(value, buf.length);
      let at = 0;
      while (joined.length - at >= 5) {
        const len = new DataView(joined.buffer, at + 1, 4).getUint32(0);
        items.push(fromBinary(TailResponseSchema, joined.subarray(at + 5, at + 5 + len)));
        at += 5 + len;
      }
      buf = joined.slice(at);
    },
    cancel: () => r.cancel(),
  };
}

const seqs = (items: TailResponse[]) => items.flatMap((i) => (i.item.case === "record" ? [i.item.value.seq] : []));
const ends = (items: TailResponse[]) => items.flatMap((i) => (i.item.case === "end" ? [i.item.value] : []));

describe("Followers", () => {
  it("open: catches up from storage, then delivers each commit once, in order", async () => {
    const { followers, commit } = setup();
    commit("a", "b", "c");
    const f = reader(followers.open(2n, true));
    await f.pull();
    expect(seqs(f.items)).toEqual([2n, 3n]);
    commit("d");
    commit("e", "f");
    await f.pull();
    expect(seqs(f.items)).toEqual([2n, 3n, 4n, 5n, 6n]);
    expect(followers.size).toBe(1);
    await f.cancel();
    expect(followers.size).toBe(0);
  });

  it("open without follow: ends at the head with a notice to reconnect after it", async () => {
    const { followers, commit } = setup();
    commit("a", "b");
    const f = reader(followers.open(0n, false));
    while (!f.closed) await f.pull();
    expect(seqs(f.items)).toEqual([1n, 2n]);
    expect(ends(f.items)).toEqual([expect.objectContaining({ reason: TailEnd_Reason.HEAD, reconnectFromSeq: 3n })]);
    expect(followers.size).toBe(0);
  });

  it("committed: every live follower gets the same bytes, encoded once", async () => {
    const { followers, commit } = setup();
    const streams = Array.from({ length: 5 }, () => followers.open(1n, true).getReader());
    // Each reader caught up (a heartbeat naming head 0) and waits.
    for (const r of streams)
      expect(fromBinary(TailResponseSchema, (await r.read()).value!.subarray(5)).item).toMatchObject({ case: "heartbeat", value: { headSeq: 0n } });
    const reads = streams.map((r) => r.read());
    commit("x");
    const chunks = await Promise.all(reads);
    for (const c of chunks) expect(c.value).toEqual(chunks[0]!.value);
    expect(fromBinary(TailResponseSchema, chunks[0]!.value!.subarray(5)).item.case).toBe("record");
    for (const r of streams) await r.cancel();
    expect(followers.size).toBe(0);
  });

  it("delta: a late follower gets the text since the last record as one delta, then the rest by offset", async () => {
    const { followers, commit } = setup();
    commit("start");
    followers.delta(1n, "e1", "Hel", false);
    followers.delta(1n, "e1", "lo", false);
    const f = reader(followers.open(1n, true));
    await f.pull();
    followers.delta(1n, "e1", " world", true);
    await f.pull();
    const deltas = f.items.flatMap((i) => (i.item.case === "delta" ? [i.item.value] : []));
    expect(deltas.map((d) => [d.afterSeq, d.offset, d.chunk])).toEqual([
      [1n, 0n, "Hello"],
      [1n, 5n, " world"],
    ]);
    // The next commit discards the deltas: a follower opened after it sees none.
    commit("Hello world");
    const g = reader(followers.open(3n, true));
    followers.delta(2n, "e1", "", true);
    await g.pull();
    expect(g.items.map((i) => i.item.case)).toEqual(["heartbeat", "delta"]);
    expect(g.items[1]!.item.value).toMatchObject({ afterSeq: 2n, chunk: "" });
  });

  it("committed: a follower that does not read is cut off past the bound, with the seq to reconnect from", async () => {
    const { followers, commit } = setup({ maxQueueBytes: 2000 });
    const slow = reader(followers.open(1n, true));
    const fast = reader(followers.open(1n, true));
    await slow.pull(); // caught up: a heartbeat
    const waiting = slow.pull();
    commit("first");
    await waiting; // got seq 1; it reads nothing more until the end
    await fast.pull(); // seq 1 from storage, then caught up
    const big = "x".repeat(600);
    for (let i = 0; i < 10; i++) {
      commit(big);
      await fast.pull();
    }
    expect(seqs(fast.items)).toEqual(Array.from({ length: 11 }, (_, i) => BigInt(i + 1)));
    expect(followers.size).toBe(1);
    while (!slow.closed) await slow.pull();
    expect(seqs(slow.items)).toEqual([1n]);
    expect(ends(slow.items)).toEqual([expect.objectContaining({ reason: TailEnd_Reason.SLOW, reconnectFromSeq: 2n })]);
  });

  it("tick: heartbeats an idle follow, then ends it after the idle limit", async () => {
    const { followers, commit, clock } = setup({ heartbeatMs: 1000, idleLimitMs: 5000 });
    commit("a");
    const f = reader(followers.open(1n, true));
    await f.pull();
    clock.advance(1500);
    await f.pull();
    expect(f.items.at(-1)!.item).toMatchObject({ case: "heartbeat", value: { headSeq: 1n } });
    clock.advance(4000);
    while (!f.closed) await f.pull();
    expect(ends(f.items)).toEqual([expect.objectContaining({ reason: TailEnd_Reason.IDLE, reconnectFromSeq: 2n })]);
    expect(followers.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it("endAll: ends every follower with the seq each one stopped at", async () => {
    const { followers, commit } = setup();
    commit("a", "b");
    const f = reader(followers.open(1n, true));
    await f.pull();
    followers.endAll(TailEnd_Reason.GONE);
    while (!f.closed) await f.pull();
    expect(ends(f.items)).toEqual([expect.objectContaining({ reason: TailEnd_Reason.GONE, reconnectFromSeq: 3n })]);
  });
});
