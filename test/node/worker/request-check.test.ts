/**
 * worker/request-check.ts hands what it decoded to the fast paths (`DecodedMessages`): the binary
 * Exec route takes the ExecRequest from there instead of decoding the body a second time. Every
 * message is filed under where its payload starts in the body; a refused body files nothing.
 */
import { create, equals } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ExecRequestSchema, Sessions } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { encodeBinary } from "../../../proto/binary-writer.js";
import { userText } from "../../../proto/messages.js";
import { envelopeFrame } from "../../../proto/record-envelopes.js";
import { concatBytes } from "../../../proto/bytes.js";
import { type DecodedMessages, refuseMalformed } from "../../../worker/request-check.js";

const exec = Sessions.method.exec;
const post = (contentType: string) => new Request("http://h/agentsessions.v1.Sessions/Exec", { method: "POST", headers: { "content-type": contentType } });
const request = create(ExecRequestSchema, { session: "sess-000000000000000000000001", inputs: [userText("hello")], expectedLastSeq: 7n });

describe("refuseMalformed: the messages it decoded", () => {
  for (const ct of ["application/connect+proto", "application/grpc-web+proto"]) {
    it(`${ct}: one envelope's message is filed under offset 5, equal to the request`, () => {
      const decoded: DecodedMessages = new Map();
      expect(refuseMalformed(exec, post(ct), envelopeFrame(0, encodeBinary(ExecRequestSchema, request)), decoded)).toBeUndefined();
      expect([...decoded.keys()]).toEqual([5]);
      expect(equals(ExecRequestSchema, decoded.get(5) as never, request)).toBe(true);
    });
  }

  it("two envelopes: each under its own offset", () => {
    const second = create(ExecRequestSchema, { session: request.session, inputs: [userText("again")] });
    const first = envelopeFrame(0, encodeBinary(ExecRequestSchema, request));
    const decoded: DecodedMessages = new Map();
    expect(
      refuseMalformed(exec, post("application/connect+proto"), concatBytes([first, envelopeFrame(0, encodeBinary(ExecRequestSchema, second))]), decoded),
    ).toBeUndefined();
    expect([...decoded.keys()]).toEqual([5, first.length + 5]);
    expect(equals(ExecRequestSchema, decoded.get(first.length + 5) as never, second)).toBe(true);
  });

  it("a body that does not decode is refused INVALID_ARGUMENT and files nothing", () => {
    const decoded: DecodedMessages = new Map();
    const refused = refuseMalformed(exec, post("application/connect+proto"), envelopeFrame(0, new Uint8Array([0x0a, 0x05, 0x01])), decoded);
    expect(refused?.code).toBe(Code.InvalidArgument);
    expect(decoded.size).toBe(0);
  });

  it("JSON is the router's to decode: nothing is filed", () => {
    const decoded: DecodedMessages = new Map();
    const body = envelopeFrame(0, new TextEncoder().encode(JSON.stringify({ session: request.session, inputs: [] })));
    expect(refuseMalformed(exec, post("application/connect+json"), body, decoded)).toBeUndefined();
    expect(decoded.size).toBe(0);
  });
});
