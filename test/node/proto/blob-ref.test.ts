/**
 * proto/blob-ref.ts: which parts become references (exactly those over the limit), the shape each
 * reference takes (contract fields where they exist, the BlobRef extension where not), that a
 * resolved event is the original again (same canonical bytes), that a changed blob is refused,
 * and that the input event is never changed.
 */
import { createHash } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  BLOB_REF_KEY,
  BlobMismatchError,
  blobRefsOf,
  blobUri,
  externalizeEvent,
  mayHoldBlobRefs,
  parseBlobUri,
  parseSha256,
  resolveEvent,
  type ExtractedBlob,
} from "../../../proto/blob-ref.js";
import { EventKind, EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const LIMIT = 1000;

function output(parts: unknown[]): Event {
  return create(EventSchema, {
    executionId: "e1",
    kind: EventKind.EVENT_OUTPUT,
    body: { case: "message", value: { role: "assistant", parts: parts as never } },
  });
}

/** Externalizes, keeps the blobs in a map, and resolves back from it. */
async function roundTrip(ev: Event) {
  const r = externalizeEvent(ev, LIMIT, sha);
  if (!r.ok) throw new Error(r.detail);
  const store = new Map<string, ExtractedBlob>(r.blobs.map((b) => [b.sha256, b]));
  const back = await resolveEvent(r.event, async (ref) => store.get(ref.sha256)!.data, sha);
  return { ref: r.event, blobs: r.blobs, back, store };
}

describe("blob references", () => {
  it("externalize: a text part of exactly the limit stays inline; one byte more (in UTF-8) becomes a BlobRef DataPart", () => {
    const at = externalizeEvent(output([{ part: { case: "text", value: { text: "a".repeat(LIMIT) } } }]), LIMIT, sha);
    expect(at.ok && at.blobs).toEqual([]);
    // 999 ASCII bytes and one two-byte character: 1001 bytes in 1000 UTF-16 units.
    const text = `${"a".repeat(999)}é`;
    const over = externalizeEvent(output([{ part: { case: "text", value: { text } } }]), LIMIT, sha);
    if (!over.ok) throw new Error(over.detail);
    expect(over.blobs.map((b) => [b.bytes, b.mime])).toEqual([[1001, "text/plain; charset=utf-8"]]);
    const body = over.event.body;
    const part = body.case === "message" ? body.value.parts[0]!.part : undefined;
    expect(part?.case).toBe("data");
    const digest = sha(new TextEncoder().encode(text));
    expect(part?.case === "data" && part.value.data).toEqual({
      [BLOB_REF_KEY]: {
        part: "text",
        uri: `agentsessions-blob:sha256/${digest}?bytes=1001`,
        digest: `sha256:${digest}`,
        bytes: "1001",
        mime: "text/plain; charset=utf-8",
      },
    });
  });

  it("externalize: file bytes, reasoning bytes and a tool result's output use the contract's uri + digest fields", () => {
    const big = new Uint8Array(LIMIT + 1).fill(7);
    const file = externalizeEvent(
      output([{ part: { case: "file", value: { mime: "image/png", name: "x.png", source: { case: "bytes", value: big } } } }]),
      LIMIT,
      sha,
    );
    if (!file.ok) throw new Error(file.detail);
    const fb = file.event.body;
    const fp = fb.case === "message" && fb.value.parts[0]!.part.case === "file" ? fb.value.parts[0]!.part.value : undefined;
    expect([fp?.source.case, fp?.digest, fp?.mime, fp?.name]).toEqual(["uri", `sha256:${sha(big)}`, "image/png", "x.png"]);
    expect(parseBlobUri(fp?.source.case === "uri" ? fp.source.value : "")).toEqual({ sha256: sha(big), bytes: LIMIT + 1 });

    const reasoning = externalizeEvent(
      output([{ part: { case: "reasoning", value: { provider: "p", opaque: { case: "opaqueBytes", value: big } } } }]),
      LIMIT,
      sha,
    );
    if (!reasoning.ok) throw new Error(reasoning.detail);
    const rb = reasoning.event.body;
    const rp = rb.case === "message" && rb.value.parts[0]!.part.case === "reasoning" ? rb.value.parts[0]!.part.value : undefined;
    expect([rp?.opaque.case, rp?.opaqueDigest]).toEqual(["opaqueUri", `sha256:${sha(big)}`]);

    const result = create(EventSchema, {
      executionId: "e1",
      kind: EventKind.EVENT_TOOL_RESULT,
      body: { case: "result", value: { id: "c1", output: { rows: "r".repeat(LIMIT) } } },
    });
    const r = externalizeEvent(result, LIMIT, sha);
    if (!r.ok) throw new Error(r.detail);
    const v = r.event.body.case === "result" ? r.event.body.value : undefined;
    expect([v?.output, v?.outputUri.startsWith("agentsessions-blob:sha256/"), v?.outputDigest]).toEqual([
      undefined,
      true,
      `sha256:${sha(new TextEncoder().encode(JSON.stringify({ rows: "r".repeat(LIMIT) })))}`,
    ]);
  });

  it("resolve: every kind of reference comes back as the original event, byte for byte", async () => {
    const bytes = new Uint8Array(3000).map((_, i) => i % 251);
    const events: Event[] = [
      output([
        { part: { case: "text", value: { text: `\uFEFF${"漢字🙂".repeat(400)}` } } },
        { part: { case: "text", value: { text: "small" } } },
        { part: { case: "file", value: { mime: "application/pdf", source: { case: "bytes", value: bytes } } } },
        {
          part: {
            case: "reasoning",
            value: {
              provider: "p",
              modelId: "m",
              opaque: { case: "opaqueBytes", value: bytes },
              summary: [{ part: { case: "text", value: { text: "s".repeat(2000) } } }],
            },
          },
        },
        { part: { case: "toolCall", value: { id: "c", tool: "t", args: { q: "q".repeat(2000), n: 1.5, deep: { list: [1, "x", null, true] } } } } },
      ]),
      create(EventSchema, {
        executionId: "e1",
        kind: EventKind.EVENT_TOOL_CALL,
        body: { case: "tool", value: { id: "c", tool: "t", args: { big: "b".repeat(5000) } } },
      }),
      create(EventSchema, {
        executionId: "e1",
        kind: EventKind.EVENT_TOOL_RESULT,
        body: { case: "result", value: { id: "c", output: { o: "o".repeat(5000) }, content: [{ part: { case: "text", value: { text: "c".repeat(5000) } } }] } },
      }),
    ];
    for (const ev of events) {
      const before = toBinary(EventSchema, ev);
      const { ref, blobs, back } = await roundTrip(ev);
      expect(blobs.length).toBeGreaterThan(0);
      expect(toBinary(EventSchema, ref).length).toBeLessThan(before.length);
      expect(mayHoldBlobRefs(toBinary(EventSchema, ref))).toBe(true);
      expect(blobRefsOf(ref).length).toBe(blobs.length);
      expect(toBinary(EventSchema, back)).toEqual(before);
      // The input was not changed by externalizing.
      expect(toBinary(EventSchema, ev)).toEqual(before);
    }
  });

  it("resolve: a blob that is changed or cut short is refused with BlobMismatchError naming it", async () => {
    const text = "z".repeat(LIMIT + 10);
    const r = externalizeEvent(output([{ part: { case: "text", value: { text } } }]), LIMIT, sha);
    if (!r.ok) throw new Error(r.detail);
    const data = r.blobs[0]!.data;
    const changed = data.slice();
    changed[5] = 65;
    await expect(resolveEvent(r.event, async () => changed, sha)).rejects.toThrow(/does not match its digest/);
    await expect(resolveEvent(r.event, async () => data.subarray(1), sha)).rejects.toBeInstanceOf(BlobMismatchError);
  });

  it("externalize: an event that already names one of our blobs is refused (only the host writes references)", () => {
    const loc = { sha256: parseSha256("a".repeat(64))!, bytes: 5 };
    const forged = output([
      { part: { case: "file", value: { mime: "text/plain", source: { case: "uri", value: blobUri(loc) }, digest: `sha256:${"a".repeat(64)}` } } },
    ]);
    const r = externalizeEvent(forged, LIMIT, sha);
    expect(r.ok).toBe(false);
    // A harness's own links are not ours and pass through untouched.
    const theirs = output([
      { part: { case: "file", value: { mime: "text/plain", source: { case: "uri", value: "https://example.com/x" }, digest: "sha256:00" } } },
    ]);
    const t = externalizeEvent(theirs, LIMIT, sha);
    expect(t.ok && t.event).toBe(theirs);
    expect(blobRefsOf(theirs)).toEqual([]);
  });

  it("parse: URIs and digests are strict", () => {
    expect(parseBlobUri(`agentsessions-blob:sha256/${"a".repeat(64)}?bytes=12`)).toEqual({ sha256: "a".repeat(64), bytes: 12 });
    for (const bad of [
      `agentsessions-blob:sha256/${"A".repeat(64)}?bytes=12`,
      `agentsessions-blob:sha256/${"a".repeat(63)}?bytes=1`,
      `agentsessions-blob:sha256/${"a".repeat(64)}?bytes=01`,
      "https://x",
    ]) {
      expect(parseBlobUri(bad)).toBeUndefined();
    }
    expect(parseSha256(`sha256:${"b".repeat(64)}`)).toBe("b".repeat(64));
    expect(parseSha256("b".repeat(65))).toBeUndefined();
  });
});
