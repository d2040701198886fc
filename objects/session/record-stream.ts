/**
 * A session's committed records from a seq, as one byte stream of enveloped LogRecords (Connect
 * streaming and gRPC-Web framing, proto/record-envelopes.ts), read from SQLite a page at a time as
 * the reader pulls: Replay's whole answer leaves the object in large chunks, and the Worker relays
 * them without touching a record (worker/record-stream-route.ts).
 * @internal
 */
import { EnvelopeWriter } from "../../proto/record-envelopes.js";
import type { Journal } from "../journal/journal.js";

/** Records per chunk: a chunk is one SQLite read and one write to the stream. */
const PAGE = 512;

/** Records with from <= seq <= to (to = 0: the head when the stream starts). */
export function recordStream(journal: Journal, from: bigint, to: bigint): ReadableStream<Uint8Array> {
  let at = from < 1n ? 1n : from;
  const hi = to <= 0n ? journal.head().seq : to;
  return new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (at > hi) {
        ctl.close();
        return;
      }
      const page = journal.read(at, hi, PAGE);
      if (page.length === 0) {
        ctl.close();
        return;
      }
      const w = new EnvelopeWriter();
      for (const r of page) w.pushRecord(r);
      ctl.enqueue(w.take());
      at = page[page.length - 1]!.seq + 1n;
    },
  });
}
