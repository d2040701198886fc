/**
 * readSse (objects/models/sse.ts): the `data:` payloads of a server-sent-events body, whatever the
 * chunking of the bytes underneath.
 */
import { describe, expect, it } from "vitest";
import { readSse } from "../../../objects/models/sse.js";

/** A response whose body delivers exactly these chunks, one read each. */
function chunked(chunks: (string | Uint8Array)[]): Response {
  const queue = chunks.map((c) => (typeof c === "string" ? new TextEncoder().encode(c) : c));
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = queue.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

async function events(res: Response, signal = new AbortController().signal): Promise<string[]> {
  const out: string[] = [];
  for await (const data of readSse(res, signal)) out.push(data);
  return out;
}

describe("readSse", () => {
  it("readSse: lines and events split across chunk boundaries are reassembled", async () => {
    const res = chunked(["da", "ta: hel", "lo\n", "\nd", 'ata: {"a":', "1}\n\n", "data: last\n", "\n"]);
    expect(await events(res)).toEqual(["hello", '{"a":1}', "last"]);
  });

  it("readSse: CRLF line endings, even with CR and LF in different chunks, end lines and events", async () => {
    const res = chunked(["data: one\r\n\r\n", "data: two\r", "\n\r", "\ndata: three\r\n\r\n"]);
    expect(await events(res)).toEqual(["one", "two", "three"]);
  });

  it("readSse: comment lines and other fields are skipped", async () => {
    const res = chunked([": keep-alive\n\n", "event: message\nid: 7\nretry: 100\n: note\ndata: x\n\n", ":ping\n\n"]);
    expect(await events(res)).toEqual(["x"]);
  });

  it("readSse: several data lines of one event are joined with newlines", async () => {
    const res = chunked(["data: line1\ndata: line2\n", "data:\ndata: line4\n\n"]);
    expect(await events(res)).toEqual(["line1\nline2\n\nline4"]);
  });

  it("readSse: only the one space after 'data:' is removed", async () => {
    const res = chunked(["data:tight\n\ndata:  two spaces\n\n"]);
    expect(await events(res)).toEqual(["tight", " two spaces"]);
  });

  it("readSse: a multi-byte character split across chunks decodes intact", async () => {
    const bytes = new TextEncoder().encode("data: héllo ✓\n\n");
    const cut = bytes.indexOf(0xc3) + 1; // inside the two bytes of "é"
    const cut2 = bytes.indexOf(0xe2) + 2; // inside the three bytes of "✓"
    const res = chunked([bytes.slice(0, cut), bytes.slice(cut, cut2), bytes.slice(cut2)]);
    expect(await events(res)).toEqual(["héllo ✓"]);
  });

  it("readSse: an aborted signal stops reading with its reason", async () => {
    const ac = new AbortController();
    const reason = new Error("stop");
    ac.abort(reason);
    await expect(events(chunked(["data: a\n\n"]), ac.signal)).rejects.toBe(reason);
  });
});
