/**
 * Following a session from the client side (docs/follow.md): the Tail stream, reopened by itself
 * from the seq after the last record it delivered whenever the connection drops or the host ends
 * the stream (idle, too slow), with exponential backoff between failed attempts. Records come out
 * exactly once and in order; the running turn's deltas are de-duplicated by (after_seq, offset),
 * so text shown before a reconnect is not shown again. SessionsClient.tail and the re-attach of a
 * dropped Exec (sdk/client.ts) use it. Tested in test/node/integration/tail.test.ts.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { TailEnd_Reason, type TailDelta, type TailResponse } from "../proto/gen/agentsessions/edge/v1/tail_pb.js";
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";

export interface TailOptions {
  /** The first seq to deliver (default 1). */
  fromSeq?: bigint;
  /** Keep following after the head (default true); false ends at the head. */
  follow?: boolean;
  signal?: AbortSignal;
  /** First wait before reopening after a failure (default 250 ms), doubled up to `maxBackoffMs`. */
  backoffMs?: number;
  /** Longest wait between attempts (default 5000 ms). */
  maxBackoffMs?: number;
  /** Failed attempts in a row before giving up with the last error (default: never give up). */
  maxAttempts?: number;
  /** Called for each heartbeat: the first one of a stream says it caught up with the head. */
  onHeartbeat?: (headSeq: bigint) => void;
  /** Called before each reopen, with the seq it reopens from, why, and the failure if it was one. */
  onReconnect?: (fromSeq: bigint, why: string, error?: ConnectError) => void;
  /**
   * Delta text already shown for the record with this seq (an Exec stream's, when re-attaching):
   * the first `length` UTF-16 units after `afterSeq` are not delivered again.
   * @internal
   */
  shown?: { afterSeq: bigint; length: number };
}

export type TailEvent = { kind: "record"; record: LogRecord } | { kind: "delta"; delta: TailDelta };

/** Codes that a new attempt cannot change: the stream stops with them. */
const TERMINAL = new Set([Code.NotFound, Code.PermissionDenied, Code.Unauthenticated, Code.InvalidArgument, Code.OutOfRange, Code.Unimplemented]);

/**
 * One attempt's Tail stream: the host's items until the stream ends or breaks off (the client's
 * binary reader, sdk/server-stream.ts, or connect-es's client for JSON).
 */
export type TailOpen = (req: { session: string; fromSeq: bigint; follow: boolean }, signal: AbortSignal) => AsyncIterable<TailResponse>;

export async function* tailSession(open: TailOpen, session: string, o: TailOptions = {}): AsyncGenerator<TailEvent> {
  let next = o.fromSeq !== undefined && o.fromSeq > 1n ? o.fromSeq : 1n;
  const follow = o.follow ?? true;
  const shown = { afterSeq: o.shown?.afterSeq ?? -1n, length: o.shown?.length ?? 0, done: false };
  let failures = 0;
  let wait = o.backoffMs ?? 250;
  for (;;) {
    let why = "";
    let error: ConnectError | undefined;
    // Each attempt's own signal: a caller that stops iterating (break) closes the connection too.
    const attempt = new AbortController();
    const abort = () => attempt.abort();
    o.signal?.addEventListener("abort", abort, { once: true });
    try {
      for await (const res of open({ session, fromSeq: next, follow }, attempt.signal)) {
        // Items already read when the caller aborted are not delivered.
        if (o.signal?.aborted) return;
        const item = res.item;
        if (item.case === "record") {
          // Exactly once: a record before `next` was delivered already (cannot happen within one stream).
          if (item.value.seq < next) continue;
          next = item.value.seq + 1n;
          failures = 0;
          wait = o.backoffMs ?? 250;
          yield { kind: "record", record: item.value };
        } else if (item.case === "delta") {
          const d = fresh(item.value, next, shown);
          if (d) yield { kind: "delta", delta: d };
        } else if (item.case === "heartbeat") {
          failures = 0;
          o.onHeartbeat?.(item.value.headSeq);
        } else if (item.case === "end") {
          if (item.value.reason === TailEnd_Reason.HEAD) return;
          if (item.value.reason === TailEnd_Reason.GONE) throw new ConnectError(`session ${session} was deleted while it was followed`, Code.NotFound);
          if (item.value.reconnectFromSeq > next) next = item.value.reconnectFromSeq;
          why = item.value.reason === TailEnd_Reason.SLOW ? "the host cut off a slow reader" : "the follow was idle";
        }
      }
      if (!why) why = "the stream ended";
    } catch (e) {
      if (o.signal?.aborted) return;
      const err = ConnectError.from(e);
      if (TERMINAL.has(err.code)) throw err;
      failures++;
      if (o.maxAttempts !== undefined && failures >= o.maxAttempts) throw err;
      why = `${Code[err.code]}: ${err.rawMessage}`;
      error = err;
      await sleep(wait, o.signal);
      wait = Math.min(wait * 2, o.maxBackoffMs ?? 5000);
      if (o.signal?.aborted) return;
    } finally {
      o.signal?.removeEventListener("abort", abort);
      attempt.abort();
    }
    o.onReconnect?.(next, why, error);
  }
}

/** The part of `d` not shown yet, or undefined (stale, or all of it shown already). */
function fresh(d: TailDelta, next: bigint, shown: { afterSeq: bigint; length: number; done: boolean }): TailDelta | undefined {
  // Deltas of a model call whose record was delivered already are superseded by that record.
  if (d.afterSeq + 1n !== next) return undefined;
  if (d.afterSeq !== shown.afterSeq) {
    shown.afterSeq = d.afterSeq;
    shown.length = 0;
    shown.done = false;
  }
  const offset = Number(d.offset);
  const end = offset + d.chunk.length;
  if (offset > shown.length) return undefined; // a gap: cannot happen, the host sends a late joiner all of it
  if (end <= shown.length && (!d.done || shown.done)) return undefined;
  const chunk = d.chunk.slice(shown.length - offset);
  const out = { ...d, offset: BigInt(shown.length), chunk };
  shown.length = Math.max(shown.length, end);
  shown.done ||= d.done;
  return out;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
