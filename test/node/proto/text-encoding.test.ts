/**
 * A string that begins with U+FEFF (a byte order mark) keeps it through every decoder the host and
 * its clients use (proto/text-encoding.ts), so a record holding one verifies: before, the decoders
 * dropped the mark, and the chain check called such a record altered.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { decodeBinary } from "../../../proto/binary-reader.js";
import { encodeBinary } from "../../../proto/binary-writer.js";
import { contentHash } from "../../../proto/canon.js";
import { canonicalRecordString } from "../../../proto/canonical-json.js";
import { EventKind, EventSchema, LogRecordSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { canonicalJsonOfBinary } from "../../../proto/jcs-binary.js";
import { userText } from "../../../proto/messages.js";
import { normalizeEvent } from "../../../proto/normalize.js";
import { ChainVerifier, servedRecordOf, verifyChain } from "../../../proto/verify.js";

const MARKED = "\ufeffa file's text, saved with its byte order mark";

function inputEvent(text: string): Event {
  return normalizeEvent(create(EventSchema, { executionId: "\ufeffe1", kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText(text) } }));
}

function textOf(ev: Event): string {
  const m = ev.body.case === "message" ? ev.body.value : undefined;
  const p = m?.parts[0]?.part;
  return p?.case === "text" ? p.value.text : "";
}

describe("a leading U+FEFF in a string field", () => {
  it("text-encoding: decodeBinary and protobuf-es fromBinary both keep it", () => {
    const bytes = encodeBinary(EventSchema, inputEvent(MARKED));
    expect(bytes.subarray(0, 40)).toContain(0xef);
    const ours = decodeBinary(EventSchema, bytes);
    expect(textOf(ours)).toBe(MARKED);
    expect(ours.executionId).toBe("\ufeffe1");
    expect(textOf(fromBinary(EventSchema, bytes))).toBe(MARKED);
  });

  it("text-encoding: the text read straight from the bytes is the decoded event's", () => {
    const ev = inputEvent(MARKED);
    const text = canonicalJsonOfBinary(EventSchema, encodeBinary(EventSchema, ev));
    expect(text).toContain('"text":"\ufeffa file');
    expect(canonicalRecordString(ev, "", 1n)).toContain(text!);
  });

  it("text-encoding: a record holding one verifies, from stored bytes and as Replay serves it", () => {
    const ev = inputEvent(MARKED);
    const hash = contentHash(ev, "", 1n);
    const stored = encodeBinary(EventSchema, ev);
    expect(verifyChain([{ seq: 1n, prevHash: "", hash, event: stored }])).toMatchObject({ ok: true, records: 1n, headHash: hash });
    const served = toBinary(LogRecordSchema, create(LogRecordSchema, { seq: 1n, prevHash: "", contentHash: hash, event: ev }));
    const v = new ChainVerifier();
    v.pushServed(servedRecordOf(served));
    expect(v.report()).toMatchObject({ ok: true, records: 1n, headHash: hash });
  });

  it("text-encoding: a changed mark is still an altered record, and invalid UTF-8 still fails strictly", () => {
    const ev = inputEvent(MARKED);
    const hash = contentHash(ev, "", 1n);
    const without = encodeBinary(EventSchema, inputEvent(MARKED.slice(1)));
    expect(verifyChain([{ seq: 1n, prevHash: "", hash, event: without }]).ok).toBe(false);
    const bad = encodeBinary(EventSchema, inputEvent("xx"));
    const at = bad.indexOf(0x78);
    bad[at] = 0xff;
    expect(() => decodeBinary(EventSchema, bad)).toThrow();
  });
});
