/**
 * objects/blobs/blob-writer.ts: the order of a large part's steps (owner counted, then bytes
 * stored, then the caller commits), one put per digest however often it appears, and nothing done
 * for events without large parts.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { blobRefsOf, type ExtractedBlob, type Sha256Hex } from "../../../proto/blob-ref.js";
import { EventKind, EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import type { BlobStore } from "../../../objects/blobs/blob-store.js";
import { createBlobWriter } from "../../../objects/blobs/blob-writer.js";
import { AppendRefusedError } from "../../../objects/controller/errors.js";

function text(t: string): Event {
  return create(EventSchema, {
    executionId: "e",
    kind: EventKind.EVENT_OUTPUT,
    body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text: t } } }] } },
  });
}

function recorder() {
  const steps: string[] = [];
  const store: BlobStore = {
    put: async (tenant: string, b: ExtractedBlob) => void steps.push(`put ${tenant} ${b.bytes}`),
    get: async () => undefined,
    delete: async () => undefined,
  };
  const own = async (shas: Sha256Hex[]) => void steps.push(`own ${shas.length}`);
  return { steps, writer: createBlobWriter({ tenant: "t", maxInline: 10, store, own }) };
}

describe("blob writer", () => {
  it("externalize: owns the digests before storing them, and stores a digest once per batch", async () => {
    const { steps, writer } = recorder();
    const out = await writer.externalize([text("x".repeat(11)), text("small"), text("x".repeat(11))]);
    expect(steps).toEqual(["own 1", "put t 11"]);
    expect(out.map((e) => blobRefsOf(e).length)).toEqual([1, 0, 1]);
  });

  it("externalize: events without large parts come back as they are, with no store call", async () => {
    const { steps, writer } = recorder();
    const events = [text("tiny")];
    expect(await writer.externalize(events)).toBe(events);
    expect(steps).toEqual([]);
  });

  it("externalize: an event naming a blob of ours is refused as an invalid event, before anything is stored", async () => {
    const { steps, writer } = recorder();
    const [ref] = await writer.externalize([text("y".repeat(20))]);
    steps.length = 0;
    await expect(writer.externalize([text("ok"), ref!])).rejects.toBeInstanceOf(AppendRefusedError);
    expect(steps).toEqual([]);
  });
});
