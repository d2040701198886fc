/**
 * The compiled binary encoder (proto/binary-writer.ts) against the reference it replaces on the
 * append path and the Exec, Tail and tunnel frames, protobuf-es's toBinary: the same bytes (or
 * both refusing) on thousands of random Events, normalized Events, Sessions and frames.
 */
import { create, type DescMessage, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { encodeBinary } from "../../../proto/binary-writer.js";
import { eventToStoredBytes } from "../../../proto/canon.js";
import { EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { HostMessageSchema } from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { TailResponseSchema } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { ControllerFrameSchema, HarnessDescriptorSchema } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ExecRequestSchema, ExecUpdateSchema, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { normalizeEvent } from "../../../proto/normalize.js";
import { message, orRefused, rng } from "../support/random-messages.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

function both(desc: DescMessage, msg: object): { fast: string; ref: string } {
  return { fast: orRefused(() => encodeBinary(desc, msg as never), hex), ref: orRefused(() => toBinary(desc, msg as never), hex) };
}

describe("the compiled binary encoder against toBinary", () => {
  it("encodeBinary: 5000 random Events give toBinary's bytes (or both refuse)", () => {
    const r = rng(20261202);
    let bytes = 0;
    for (let i = 0; i < 5000; i++) {
      const ev = message(r, EventSchema, 0);
      const { fast, ref } = both(EventSchema, ev);
      expect(fast, `case ${i}`).toBe(ref);
      if (ref !== "<refused>") bytes += ref.length / 2;
    }
    // The generator must produce real content, not empty messages.
    expect(bytes).toBeGreaterThan(5000 * 20);
  });

  it("encodeBinary: 2000 random Sessions (maps, optional fields, timestamps) give toBinary's bytes", () => {
    const r = rng(99);
    for (let i = 0; i < 2000; i++) {
      const { fast, ref } = both(SessionSchema, message(r, SessionSchema, 0));
      expect(fast, `case ${i}`).toBe(ref);
    }
  });

  it.each([
    ["ExecRequest", ExecRequestSchema],
    ["ExecUpdate", ExecUpdateSchema],
    ["TailResponse", TailResponseSchema],
    ["HostMessage", HostMessageSchema],
    ["ControllerFrame", ControllerFrameSchema],
    ["HarnessDescriptor", HarnessDescriptorSchema],
  ] as [string, DescMessage][])("encodeBinary: 1000 random %s messages (the other frames it writes) give toBinary's bytes", (_name, desc) => {
    const r = rng(desc.typeName.length);
    for (let i = 0; i < 1000; i++) {
      const { fast, ref } = both(desc, message(r, desc, 0));
      expect(fast, `case ${i}`).toBe(ref);
    }
  });

  it("eventToStoredBytes: normalized random Events are stored as toBinary would write them", () => {
    const r = rng(5);
    let compared = 0;
    for (let i = 0; i < 2000; i++) {
      let ev;
      try {
        ev = normalizeEvent(create(EventSchema, message(r, EventSchema, 0) as never));
      } catch {
        continue;
      }
      expect(Buffer.from(eventToStoredBytes(ev)).toString("hex"), `case ${i}`).toBe(Buffer.from(toBinary(EventSchema, ev)).toString("hex"));
      compared++;
    }
    expect(compared).toBeGreaterThan(1500);
  });

  it("encodeBinary: unknown fields are written after the known ones, as toBinary does", () => {
    const ev = create(EventSchema, { executionId: "x", kind: 3 });
    (ev as { $unknown?: unknown }).$unknown = [{ no: 99, wireType: 2, data: Uint8Array.of(2, 104, 105) }];
    expect(Buffer.from(encodeBinary(EventSchema, ev)).toString("hex")).toBe(Buffer.from(toBinary(EventSchema, ev)).toString("hex"));
    expect(encodeBinary(EventSchema, ev).length).toBeGreaterThan(encodeBinary(EventSchema, create(EventSchema, { executionId: "x", kind: 3 })).length);
  });
});
