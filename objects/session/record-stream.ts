/**
 * A session's committed records from a seq, as one byte stream of enveloped LogRecords (Connect
 * streaming and gRPC-Web framing, proto/record-envelopes.ts), read from SQLite a page at a time as
 * the reader pulls, and its ending last (Connect's end-stream frame or gRPC-Web's trailers, an
 * error ending if the journal cannot be read to the end): Replay's whole answer, which the Worker
 * hands to the caller as it is (worker/record-stream-route.ts).
 * @internal
 */
import { Code } from "@connectrpc/connect";
import { EnvelopeWriter, type Ending, streamEnd } from "../../proto/record-envelopes.js";
import type { Journal } from "../journal/journal.js";

/** Records per chunk: a chunk is one SQLite read and one write to the stream. */
const PAGE = 512;

/** Records with from <= seq <= to (to = 0: the head when the stream starts). */
export function recordStream(journal: Journal, from: bigint, to: bigint, ending: Ending): ReadableStream<Uint8Array> {
  let at = from < 1n ? 1n : from;
  const hi = to <= 0n ? journal.head().seq : to;
  const end = (ctl: ReadableStreamDefaultController<Uint8Array>, e?: { code: Code; message: string }) => {
    ctl.enqueue(streamEnd(ending, e));
    ctl.close();
  };
  return new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (at > hi) return end(ctl);
      let page;
      try {
        page = journal.readColumns(at, hi, PAGE);
      } catch {
        // Storage failed mid-answer (the session erased under it, say): say so, never cut silently.
        return end(ctl, {
          code: Code.Unavailable,
          message: "the journal could not be read to its end: Replay again from the seq after the last record you received",
        });
      }
      if (page.length === 0) return end(ctl);
      // Sized for the page: its events, and at most 180 bytes of envelope, seq, hashes and fence each.
      let bytes = 0;
      for (const r of page) bytes += r.event.length + (r.eventHead?.length ?? 0) + 180;
      const w = new EnvelopeWriter(bytes);
      for (const r of page) w.pushRecord(r);
      ctl.enqueue(w.take());
      at = BigInt(page[page.length - 1]!.seq) + 1n;
    },
  });
}
