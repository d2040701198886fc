/**
 * Where live records come from: one small interface, `follow(uid, fromSeq, handlers)`, so the
 * session view does not care how. The feed the views use is the host's Tail stream
 * (docs/follow.md) through the SDK over fetch streaming: committed records from a seq, then each
 * one as it commits, and the running turn's streamed text, reconnecting by itself from the seq
 * after the last record it delivered. createPollingFeed (Replay from the last seen seq) stays for
 * a host without Tail.
 */
import type { TailDelta } from "../proto/gen/agentsessions/edge/v1/tail_pb.js";
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { api, records } from "./api.js";
import { startPolling } from "./poll.js";

export interface FollowHandlers {
  /** New committed records, in seq order, never one seen before. */
  onRecords(records: LogRecord[]): void;
  /** A failed attempt; the feed keeps trying. */
  onError?(e: unknown): void;
  /** An attempt succeeded (after a failure: the connection is back). */
  onOk?(): void;
  /** Streamed text of the running turn since the last committed record (never shown twice). */
  onDelta?(delta: TailDelta): void;
}

export interface RecordFeed {
  /** Delivers committed records with seq >= fromSeq as they commit, until the returned function is called. */
  follow(uid: string, fromSeq: bigint, handlers: FollowHandlers): () => void;
}

export function createPollingFeed(intervalMs = 1000): RecordFeed {
  return {
    follow(uid, fromSeq, handlers) {
      let next = fromSeq < 1n ? 1n : fromSeq;
      return startPolling(
        async (signal) => {
          const got = await records(uid, next, 0n, signal);
          const fresh = got.filter((r) => r.seq >= next);
          if (fresh.length === 0 || signal.aborted) return;
          next = fresh[fresh.length - 1]!.seq + 1n;
          handlers.onRecords(fresh);
        },
        { intervalMs, onError: handlers.onError, onOk: handlers.onOk },
      );
    },
  };
}

export function createTailFeed(): RecordFeed {
  return {
    follow(uid, fromSeq, handlers) {
      const ac = new AbortController();
      let failed = false;
      void (async () => {
        try {
          const events = api().tail(uid, {
            fromSeq,
            signal: ac.signal,
            // An end the host chose (idle, a slow reader) is no failure: only a lost connection is reported.
            onHeartbeat: () => {
              if (failed) handlers.onOk?.();
              failed = false;
            },
            onReconnect: (_from, _why, error) => {
              if (!error) return;
              failed = true;
              handlers.onError?.(error);
            },
          });
          for await (const ev of events) {
            if (ac.signal.aborted) return;
            if (failed) handlers.onOk?.();
            failed = false;
            if (ev.kind === "record") handlers.onRecords([ev.record]);
            else handlers.onDelta?.(ev.delta);
          }
        } catch (e) {
          // A refusal (the session deleted, the key's role): no reconnect can change it.
          if (!ac.signal.aborted) handlers.onError?.(e);
        }
      })();
      return () => ac.abort();
    },
  };
}

/** The feed the views use. */
export const feed: RecordFeed = createTailFeed();
