/**
 * The one fan-out point of a session object: every Tail stream of this session (docs/follow.md).
 *
 * A follower first reads the committed records from its `from` seq out of SQLite, a page at a time
 * as it pulls (like Replay: record-stream.ts); once it reaches the head it is live, and each batch
 * the session commits is encoded once here and the same bytes are queued for every live follower.
 * The commit path calls `committed` after the SQLite transaction returned (session/state.ts), so a
 * follower never sees a staged or rolled-back record. The running turn's deltas are kept in memory
 * since the last committed record (a late follower gets them as one delta) and dropped at the next
 * commit: they are never journaled.
 *
 * Nothing here ever waits for a reader: a follower whose queue passes `maxQueueBytes` is cut off
 * with an `end` notice naming the seq to reconnect from, and its queue is freed. One timer for all
 * followers sends heartbeats on an idle follow and ends a follow that stayed idle too long.
 *
 * Each stream item is one Connect/gRPC-Web envelope holding a binary TailResponse. A follower
 * opened with the caller's `Ending` is the whole answer of a binary Tail: its end item is followed
 * by the stream's OK ending, and the Worker hands the stream to the caller untouched
 * (worker/record-stream-route.ts); without one, the Worker's router relays the items
 * (worker/tail-service.ts). Tested in test/node/session/followers.test.ts.
 * @internal
 */
import { create } from "@bufbuild/protobuf";
import { encodeBinary } from "../../proto/binary-writer.js";
import { concatBytes } from "../../proto/bytes.js";
import { type TailResponse, TailEnd_Reason, TailResponseSchema } from "../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import type { StoredRecord } from "../journal/journal.js";
import { type Ending, recordUpdateEnvelope, streamEnd, tailDeltaEnvelope } from "../../proto/record-envelopes.js";

export { TailEnd_Reason as TailEndReason };

/** What followers read committed records from: the session's journal. */
export interface FollowSource {
  head(): { seq: bigint };
  read(from: bigint, to: bigint, limit: number): StoredRecord[];
}

export interface FollowLimits {
  /** A live follower that was sent nothing for this long gets a heartbeat. */
  heartbeatMs: number;
  /** A live follower that was sent no record or delta for this long is ended (REASON_IDLE). */
  idleLimitMs: number;
  /** Bytes queued for one follower beyond which it is cut off (REASON_SLOW). */
  maxQueueBytes: number;
}

export interface FollowClock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** Why a follower left: the reader went away, or the object ended its stream (TailEnd's reasons). */
export type LeaveReason = "canceled" | "head" | "idle" | "slow" | "gone";

/** A follower that left: why, how long it followed, and how many records it was handed. */
export interface Leave {
  reason: LeaveReason;
  ms: number;
  records: number;
}

export const DEFAULT_FOLLOW_LIMITS: FollowLimits = { heartbeatMs: 15_000, idleLimitMs: 600_000, maxQueueBytes: 4 * 1024 * 1024 };

const systemClock: FollowClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** Records per catch-up read. */
const PAGE = 256;

interface Item {
  bytes: Uint8Array;
  /** The record's seq; 0 for a delta or heartbeat. */
  seq: bigint;
}

interface Follower {
  /** The next seq this follower needs (read from storage, or queued when live). */
  next: bigint;
  /** The first seq not yet handed to the stream: where a reconnect starts. */
  delivered: bigint;
  follow: boolean;
  live: boolean;
  queue: Item[];
  bytes: number;
  lastSentMs: number;
  lastActivityMs: number;
  openedMs: number;
  /** Records handed to the stream so far (a queued record is counted when it is handed on). */
  records: number;
  wake?: () => void;
  ctl?: ReadableStreamDefaultController<Uint8Array>;
  done: boolean;
  /** The caller's protocol, when this stream is the whole answer: its OK ending follows the end item. */
  ending?: Ending;
}

export class Followers {
  private readonly _all = new Set<Follower>();
  private _delta: { afterSeq: bigint; executionId: string; text: string; done: boolean } | undefined;
  private _timer: unknown;

  constructor(
    private readonly _source: () => FollowSource,
    private readonly _limits: FollowLimits = DEFAULT_FOLLOW_LIMITS,
    private readonly _clock: FollowClock = systemClock,
    /** Told once of every follower that leaves (session/state.ts writes it as a log line). */
    private readonly _onLeave?: (leave: Leave) => void,
  ) {}

  /** Followers attached now (live or catching up). */
  get size(): number {
    return this._all.size;
  }

  /**
   * A Tail stream from `from` (at least 1): catch-up, then (with `follow`) every commit until it
   * ends. With `ending`, the stream's last bytes after its end item are that protocol's OK ending.
   */
  open(from: bigint, follow: boolean, ending?: Ending): ReadableStream<Uint8Array> {
    const now = this._clock.now();
    const start = from < 1n ? 1n : from;
    const f: Follower = {
      next: start,
      delivered: start,
      follow,
      live: false,
      queue: [],
      bytes: 0,
      lastSentMs: now,
      lastActivityMs: now,
      openedMs: now,
      records: 0,
      done: false,
      ending,
    };
    this._all.add(f);
    this._arm();
    return new ReadableStream<Uint8Array>(
      {
        start: (ctl) => {
          f.ctl = ctl;
        },
        pull: (ctl) => this._pull(f, ctl),
        cancel: () => this._drop(f),
      },
      // Nothing is buffered inside the stream: the follower's queue is the only buffer, and it is bounded.
      { highWaterMark: 0 },
    );
  }

  /** A batch the session just committed (after its transaction): queued, as the same bytes, for every live follower. */
  committed(records: readonly StoredRecord[]): void {
    if (records.length === 0) return;
    this._delta = undefined;
    if (this._all.size === 0) return;
    const first = records[0]!.seq;
    let items: Item[] | undefined;
    const now = this._clock.now();
    for (const f of this._all) {
      if (!f.live) continue;
      if (f.next !== first) {
        // Out of step (cannot happen with one writer): read the rest from storage instead.
        f.live = false;
        this._wake(f);
        continue;
      }
      items ??= records.map((r) => ({ seq: r.seq, bytes: recordItemBytes(r) }));
      for (const it of items) this._push(f, it);
      f.next = records[records.length - 1]!.seq + 1n;
      f.lastActivityMs = now;
      this._wake(f);
    }
  }

  /** A delta of the running turn (after the last committed record); never journaled. */
  delta(afterSeq: bigint, executionId: string, chunk: string, done: boolean): void {
    const d = this._delta;
    if (!d || d.afterSeq !== afterSeq || d.executionId !== executionId) this._delta = { afterSeq, executionId, text: "", done: false };
    const cur = this._delta!;
    const offset = cur.text.length;
    cur.text += chunk;
    cur.done = done;
    if (this._all.size === 0) return;
    let item: Item | undefined;
    const now = this._clock.now();
    for (const f of this._all) {
      if (!f.live || f.next !== afterSeq + 1n) continue;
      item ??= { seq: 0n, bytes: tailDeltaEnvelope(afterSeq, executionId, BigInt(offset), chunk, done) };
      this._push(f, item);
      f.lastActivityMs = now;
      this._wake(f);
    }
  }

  /** Ends every follower (the session was erased): each is told where it stopped. */
  endAll(reason: TailEnd_Reason): void {
    this._delta = undefined;
    for (const f of [...this._all]) this._end(f, reason);
  }

  private _pull(f: Follower, ctl: ReadableStreamDefaultController<Uint8Array>): Promise<void> | void {
    for (;;) {
      if (f.queue.length > 0) {
        this._flush(f, ctl);
        return;
      }
      if (f.done) {
        closeQuietly(ctl);
        return;
      }
      if (!f.live) {
        this._catchUp(f);
        continue;
      }
      return new Promise<void>((resolve) => {
        f.wake = resolve;
      }).then(() => this._pull(f, ctl));
    }
  }

  /** One page of committed records from storage; at the head the follower goes live (or ends). */
  private _catchUp(f: Follower): void {
    const src = this._source();
    const head = src.head().seq;
    const page = f.next <= head ? src.read(f.next, head, PAGE) : [];
    for (const r of page) this._push(f, { seq: r.seq, bytes: recordItemBytes(r) });
    // The journal has no gaps, so an empty page means the head moved under us: start over from it.
    f.next = page.length > 0 ? page[page.length - 1]!.seq + 1n : head + 1n;
    if (f.next <= head || f.done) return;
    if (!f.follow) {
      this._queueEnd(f, TailEnd_Reason.HEAD);
      return;
    }
    f.live = true;
    // The page just read is being read now and never counts against the bound (_push): a last
    // page over it would otherwise cut the follower off the moment it goes live, and its reconnect
    // would read the same page again.
    f.bytes = 0;
    f.lastActivityMs = this._clock.now();
    // "Caught up": the client learns the head at once, even when nothing is running.
    this._push(f, { seq: 0n, bytes: envelope(heartbeatItem(head)) });
    const d = this._delta;
    if (d && d.afterSeq + 1n === f.next && (d.text.length > 0 || d.done)) {
      this._push(f, { seq: 0n, bytes: tailDeltaEnvelope(d.afterSeq, d.executionId, 0n, d.text, d.done) });
    }
  }

  private _flush(f: Follower, ctl: ReadableStreamDefaultController<Uint8Array>): void {
    const items = f.queue;
    f.queue = [];
    f.bytes = 0;
    let n = 0;
    for (const it of items) n += it.bytes.length;
    const out = new Uint8Array(n);
    let at = 0;
    for (const it of items) {
      out.set(it.bytes, at);
      at += it.bytes.length;
      if (it.seq !== 0n) {
        f.delivered = it.seq + 1n;
        f.records++;
      }
    }
    f.lastSentMs = this._clock.now();
    ctl.enqueue(out);
  }

  private _push(f: Follower, it: Item): void {
    if (f.done) return;
    f.queue.push(it);
    f.bytes += it.bytes.length;
    // A catch-up page never counts against the bound: the follower is reading it now.
    if (f.live && f.bytes > this._limits.maxQueueBytes) this._end(f, TailEnd_Reason.SLOW);
  }

  /** The end notice after whatever is queued (used when the follower is still reading). */
  private _queueEnd(f: Follower, reason: TailEnd_Reason): void {
    const reconnect = f.queue.reduce((at, it) => (it.seq !== 0n ? it.seq + 1n : at), f.delivered);
    f.queue.push({ seq: 0n, bytes: endBytes(f, reason, reconnect) });
    f.done = true;
    this._all.delete(f);
    this._disarmIfIdle();
    this._left(f, reason);
  }

  /**
   * Ends a follower now: its queue is dropped (its memory freed at once), the end notice names the
   * first record it was not handed, and the stream closes after it, read or not.
   */
  private _end(f: Follower, reason: TailEnd_Reason): void {
    if (f.done) return;
    f.done = true;
    f.queue = [];
    f.bytes = 0;
    this._all.delete(f);
    this._disarmIfIdle();
    this._left(f, reason);
    try {
      f.ctl?.enqueue(endBytes(f, reason, f.delivered));
    } catch {
      // the reader already went away
    }
    if (f.ctl) closeQuietly(f.ctl);
    this._wake(f);
  }

  private _drop(f: Follower): void {
    const leaving = !f.done;
    f.done = true;
    f.queue = [];
    f.bytes = 0;
    if (leaving) this._left(f, "canceled");
    this._all.delete(f);
    this._disarmIfIdle();
    this._wake(f);
  }

  private _left(f: Follower, reason: TailEnd_Reason | "canceled"): void {
    if (!this._onLeave) return;
    const why: LeaveReason = reason === "canceled" ? reason : LEAVE_REASONS[reason];
    // What is still queued goes out before the stream closes (an end at the head); a dropped queue is empty.
    const queued = f.queue.reduce((n, it) => n + (it.seq !== 0n ? 1 : 0), 0);
    this._onLeave({ reason: why, ms: this._clock.now() - f.openedMs, records: f.records + queued });
  }

  private _wake(f: Follower): void {
    const w = f.wake;
    f.wake = undefined;
    w?.();
  }

  /** One timer for every follower, running only while there are any. */
  private _arm(): void {
    if (this._timer !== undefined || this._all.size === 0) return;
    const every = Math.max(10, Math.floor(Math.min(this._limits.heartbeatMs, this._limits.idleLimitMs) / 2));
    this._timer = this._clock.setTimer(() => {
      this._timer = undefined;
      this._tick();
      this._arm();
    }, every);
  }

  private _disarmIfIdle(): void {
    if (this._all.size > 0 || this._timer === undefined) return;
    this._clock.clearTimer(this._timer);
    this._timer = undefined;
  }

  private _tick(): void {
    const now = this._clock.now();
    let beat: Item | undefined;
    for (const f of [...this._all]) {
      if (!f.live) continue;
      if (now - f.lastActivityMs >= this._limits.idleLimitMs) {
        this._end(f, TailEnd_Reason.IDLE);
        continue;
      }
      if (now - f.lastSentMs >= this._limits.heartbeatMs && f.queue.length === 0) {
        beat ??= { seq: 0n, bytes: envelope(heartbeatItem(this._source().head().seq)) };
        this._push(f, beat);
        f.lastSentMs = now;
        this._wake(f);
      }
    }
  }
}

const LEAVE_REASONS: Record<TailEnd_Reason, LeaveReason> = {
  [TailEnd_Reason.UNSPECIFIED]: "head",
  [TailEnd_Reason.HEAD]: "head",
  [TailEnd_Reason.IDLE]: "idle",
  [TailEnd_Reason.SLOW]: "slow",
  [TailEnd_Reason.GONE]: "gone",
};

/**
 * A record as an enveloped TailResponse, written from its stored bytes: TailResponse's `record`
 * is field 1, as ExecUpdate's is, so the Exec stream's record envelope is this item byte for
 * byte (test/node/proto/record-envelopes.test.ts), with no message made or encoded.
 */
function recordItemBytes(r: StoredRecord): Uint8Array {
  return recordUpdateEnvelope(r);
}

function heartbeatItem(headSeq: bigint): TailResponse {
  return create(TailResponseSchema, { item: { case: "heartbeat", value: { headSeq } } });
}

/** The end item, and the stream's OK ending when the follower's stream is the whole answer. */
function endBytes(f: Follower, reason: TailEnd_Reason, reconnectFromSeq: bigint): Uint8Array {
  const item = envelope(endItem(reason, reconnectFromSeq));
  return f.ending ? concatBytes([item, streamEnd(f.ending)]) : item;
}

function endItem(reason: TailEnd_Reason, reconnectFromSeq: bigint): TailResponse {
  return create(TailResponseSchema, { item: { case: "end", value: { reason, reconnectFromSeq } } });
}

function closeQuietly(ctl: ReadableStreamDefaultController<Uint8Array>): void {
  try {
    ctl.close();
  } catch {
    // already closed (ended while a pull waited) or cancelled
  }
}

/** One Connect/gRPC-Web envelope: flag 0, a 4-byte big-endian length, the message. */
function envelope(msg: TailResponse): Uint8Array {
  const body = encodeBinary(TailResponseSchema, msg);
  const out = new Uint8Array(5 + body.length);
  new DataView(out.buffer).setUint32(1, body.length);
  out.set(body, 5);
  return out;
}
