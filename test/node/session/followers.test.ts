/**
 * The fan-out point (objects/session/followers.ts) over a real journal on sql.js: catch-up then
 * live, exactly once and in order, one encoding per commit, deltas after the last record, the
 * queue bound, heartbeats and the idle limit on a fake clock; a stream that is the whole answer
 * (its protocol's ending after the end item), and the report of every follower that leaves.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { type TailResponse, TailEnd_Reason, TailResponseSchema } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Journal, JOURNAL_SCHEMA } from "../../../objects/journal/journal.js";
import { type FollowClock, type FollowLimits, Followers, type Leave } from "../../../objects/session/followers.js";
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

function setup(limits: Partial<FollowLimits> = {}, onLeave?: (leave: Leave) => void) {
  const db = createTestDb();
  for (const s of JOURNAL_SCHEMA) db.query(s);
  const journal = new Journal(db);
  const clock = new FakeClock();
  const followers = new Followers(() => journal, { heartbeatMs: 1000, idleLimitMs: 10_000, maxQueueBytes: 1 << 20, ...limits }, clock, onLeave);
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

  it("open: a last catch-up page larger than the queue bound is read, and the follower goes live, not cut off", async () => {
    const { followers, commit } = setup({ maxQueueBytes: 2000 });
    // Four records of 900 bytes: one page, twice the bound.
    commit(..."abcd".split("").map((c) => c.repeat(900)));
    const f = reader(followers.open(1n, true));
    while (!f.items.some((i) => i.item.case === "heartbeat") && !f.closed) await f.pull();
    expect(seqs(f.items)).toEqual([1n, 2n, 3n, 4n]);
    expect(ends(f.items)).toEqual([]);
    expect(followers.size).toBe(1);
    // Live now: the bound counts what is queued from here on.
    const next = f.pull();
    commit("e");
    await next;
    expect(seqs(f.items)).toEqual([1n, 2n, 3n, 4n, 5n]);
    await f.cancel();
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

  it("open with an ending: the stream is the whole answer, its end item followed by that protocol's OK ending", async () => {
    /** Every envelope of the whole stream: flags and payload. */
    const envelopes = async (stream: ReadableStream<Uint8Array>) => {
      const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
      const out: { flags: number; payload: Uint8Array }[] = [];
      for (let at = 0; at < bytes.length; ) {
        const len = new DataView(bytes.buffer, at + 1, 4).getUint32(0);
        out.push({ flags: bytes[at]!, payload: bytes.subarray(at + 5, at + 5 + len) });
        at += 5 + len;
      }
      return out;
    };
    const item = (e: { payload: Uint8Array }) => fromBinary(TailResponseSchema, e.payload).item;
    const text = (e: { payload: Uint8Array }) => new TextDecoder().decode(e.payload);

    // At the head (the end queued after the records), in Connect: the end-stream frame `{}`.
    const { followers, commit, clock } = setup({ heartbeatMs: 1000, idleLimitMs: 5000 });
    commit("a", "b");
    const head = await envelopes(followers.open(1n, false, "connect"));
    expect(head.map((e) => e.flags)).toEqual([0, 0, 0, 0x02]);
    expect(item(head[2]!)).toMatchObject({ case: "end", value: { reason: TailEnd_Reason.HEAD, reconnectFromSeq: 3n } });
    expect(text(head[3]!)).toBe("{}");

    // Ended now (the session deleted), in gRPC-Web: the trailer frame with status 0.
    const gone = followers.open(1n, true, "grpc-web");
    const all = envelopes(gone);
    await Promise.resolve();
    followers.endAll(TailEnd_Reason.GONE);
    const g = await all;
    expect(g.at(-1)!.flags).toBe(0x80);
    expect(text(g.at(-1)!)).toBe("grpc-status: 0\r\n");
    expect(item(g.at(-2)!)).toMatchObject({ case: "end", value: { reason: TailEnd_Reason.GONE } });

    // Idle: the same ending after the notice; a stream without an ending has none.
    const idle = envelopes(followers.open(3n, true, "connect"));
    const plain = envelopes(followers.open(3n, true));
    await Promise.resolve();
    clock.advance(6000);
    const [i, p] = await Promise.all([idle, plain]);
    expect(i.map((e) => e.flags).slice(-2)).toEqual([0, 0x02]);
    expect(item(i.at(-2)!)).toMatchObject({ case: "end", value: { reason: TailEnd_Reason.IDLE } });
    expect(p.every((e) => e.flags === 0)).toBe(true);
    expect(item(p.at(-1)!)).toMatchObject({ case: "end", value: { reason: TailEnd_Reason.IDLE } });
  });

  it("onLeave: each follower that leaves is reported once, with why and how many records it was handed", async () => {
    const left: Leave[] = [];
    const { followers, commit, clock } = setup({ heartbeatMs: 1000, idleLimitMs: 5000 }, (l) => left.push(l));
    commit("a", "b", "c");
    // Canceled by its reader after two records were handed on.
    const c = reader(followers.open(2n, true));
    await c.pull();
    clock.advance(250);
    await c.cancel();
    // At the head, without follow: the records queued with its end count.
    const h = reader(followers.open(1n, false));
    while (!h.closed) await h.pull();
    // Idle, and gone.
    const i = reader(followers.open(4n, true));
    await i.pull();
    clock.advance(6000);
    while (!i.closed) await i.pull();
    const g = reader(followers.open(1n, true));
    await g.pull();
    followers.endAll(TailEnd_Reason.GONE);
    while (!g.closed) await g.pull();
    await g.cancel();
    expect(left).toEqual([
      { reason: "canceled", ms: 250, records: 2 },
      { reason: "head", ms: 0, records: 3 },
      { reason: "idle", ms: expect.any(Number), records: 0 },
      { reason: "gone", ms: 0, records: 3 },
    ]);
    // Ended at the first tick past the idle limit.
    expect(left[2]!.ms).toBeGreaterThanOrEqual(5000);
    expect(left[2]!.ms).toBeLessThanOrEqual(6000);
    expect(followers.size).toBe(0);
  });
});
