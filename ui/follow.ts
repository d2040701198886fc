/**
 * Where live records come from: one small interface, `follow(uid, fromSeq, handlers)`, so the
 * session view does not care how. Today it polls Replay from the last seen seq; when the host
 * serves the Tail stream (committed records from a seq, then each new one as it commits), a
 * Tail-backed feed replaces createPollingFeed here and nothing else changes.
 */
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { records } from "./api.js";
import { startPolling } from "./poll.js";

export interface FollowHandlers {
  /** New committed records, in seq order, never one seen before. */
  onRecords(records: LogRecord[]): void;
  /** A failed attempt; the feed keeps trying. */
  onError?(e: unknown): void;
  /** An attempt succeeded (after a failure: the connection is back). */
  onOk?(): void;
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

/** The feed the views use. */
export const feed: RecordFeed = createPollingFeed();
