/** proto/passthrough.ts: messages built from bytes encode back to exactly those bytes. */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventSchema, LogRecordSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecUpdateSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../../../proto/messages.js";
import { binaryPassthrough, logRecordWithEventBytes } from "../../../proto/passthrough.js";

const event = create(EventSchema, { executionId: "e1", kind: 3, body: { case: "message", value: userText("héllo") } });
const eventBytes = toBinary(EventSchema, event);

describe("passthrough", () => {
  it("logRecordWithEventBytes: encodes exactly as the decoded LogRecord does, genesis and later records alike", () => {
    for (const [seq, prevHash, fence] of [
      [1n, "", 1n],
      [7n, "ab".repeat(32), 0n],
    ] as const) {
      const decoded = create(LogRecordSchema, { seq, prevHash, contentHash: "cd".repeat(32), fence, event });
      const fast = logRecordWithEventBytes({ seq, prevHash, hash: "cd".repeat(32), fence, event: eventBytes });
      expect(toBinary(LogRecordSchema, fast)).toEqual(toBinary(LogRecordSchema, decoded));
      // Wrapped in an ExecUpdate, as the Exec stream carries it.
      expect(toBinary(ExecUpdateSchema, create(ExecUpdateSchema, { update: { case: "record", value: fast } }))).toEqual(
        toBinary(ExecUpdateSchema, create(ExecUpdateSchema, { update: { case: "record", value: decoded } })),
      );
    }
  });

  it("binaryPassthrough: any ExecUpdate's bytes come back unchanged, and still decode to the same update", () => {
    const updates = [
      create(ExecUpdateSchema, { update: { case: "record", value: create(LogRecordSchema, { seq: 3n, event }) } }),
      create(ExecUpdateSchema, { update: { case: "delta", value: { executionId: "e1", chunk: "hi", done: true } } }),
      create(ExecUpdateSchema, { update: { case: "session", value: { metadata: { uid: "sess-1", project: "p" }, lastSeq: 9n } } }),
    ];
    for (const u of updates) {
      const bytes = toBinary(ExecUpdateSchema, u);
      const relayed = toBinary(ExecUpdateSchema, binaryPassthrough(ExecUpdateSchema, bytes));
      expect(relayed).toEqual(bytes);
      expect(fromBinary(ExecUpdateSchema, relayed)).toEqual(u);
    }
  });
});
