/**
 * Golden bytes of the ateapi subset the bridge speaks (proto/ateapi/control.proto, pinned to G3).
 * Upstream renumbers fields between releases without reserving the old numbers, so these vectors
 * are computed by hand from the G3 field table, not from our own encoder: a renumbering in the
 * .proto, or a request builder that sets one field too many, fails here instead of being refused by
 * a server. Responses are decoded from hand-written bytes the same way. Last, the stand-in refuses
 * a field the pinned server does not know, as a G3 server does (a G1-era `boot` flag).
 */
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ActorSchema,
  ActorState,
  Control,
  CreateActorRequestSchema,
  CreateTagRequestSchema,
  DeleteActorRequestSchema,
  DeleteTagRequestSchema,
  GetActorRequestSchema,
  ResumeActorRequestSchema,
  ResumeActorResponseSchema,
  SnapshotContentScope,
  SuspendActorRequestSchema,
  TagSchema,
  TagScope,
} from "../../../proto/gen/ateapi/control_pb.js";
import {
  createActorRequest,
  createTagRequest,
  deleteActorRequest,
  deleteTagRequest,
  getActorRequest,
  resumeActorRequest,
  suspendActorRequest,
} from "../../../runtimes/substrate/ateapi-requests.js";
import { startStandin, type Standin } from "../../fixtures/ateapi/standin.js";
import { HARNESSES } from "./support.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const bytes = (h: string) => new Uint8Array(Buffer.from(h.replace(/\s+/g, ""), "hex"));
const encode = <D extends DescMessage>(schema: D, m: MessageShape<D>) => hex(toBinary(schema, m));

// ObjectRef{1 atespace "as", 2 name "c"}: 0a 02 61 73 | 12 01 63 (7 bytes)
const REF_AS_C = "0a026173 120163";

describe("ateapi G3: request bytes", () => {
  it("GetActor / ResumeActor / SuspendActor: {1 actor: ObjectRef{1 atespace, 2 name}}", () => {
    const want = `0a07 ${REF_AS_C}`.replace(/\s+/g, "");
    expect(encode(GetActorRequestSchema, getActorRequest({ atespace: "as", name: "c" }))).toBe(want);
    // No field 2: G3 dropped the G1/G2 `boot` flag, and a G3 server refuses it.
    expect(encode(ResumeActorRequestSchema, resumeActorRequest({ atespace: "as", name: "c" }))).toBe(want);
    expect(encode(SuspendActorRequestSchema, suspendActorRequest({ atespace: "as", name: "c" }))).toBe(want);
  });

  it("CreateActor from the template: {1 actor{1 metadata{1 atespace, 2 name}, 4 actor_template}}", () => {
    // metadata: 0a 07 | 0a026173 120163 ; actor_template (field 4, LEN = 0x22): 22 07 | 0a026173 120174
    const actor = "0a07 0a026173120163 2207 0a026173120174";
    expect(encode(CreateActorRequestSchema, createActorRequest({ atespace: "as", name: "c" }, { atespace: "as", name: "t" }))).toBe(
      `0a12 ${actor}`.replace(/\s+/g, ""),
    );
  });

  it("CreateActor from a tag: source_tag is field 6 (LEN = 0x32)", () => {
    // source_tag ObjectRef{as, "fork-c"}: 0a026173 1206 666f726b2d63 (12 bytes)
    const actor = "0a07 0a026173120163 2207 0a026173120174 320c 0a026173 1206666f726b2d63";
    expect(
      encode(CreateActorRequestSchema, createActorRequest({ atespace: "as", name: "c" }, { atespace: "as", name: "t" }, { atespace: "as", name: "fork-c" })),
    ).toBe(`0a20 ${actor}`.replace(/\s+/g, ""));
  });

  it("DeleteActor with any_state: {1 actor, 2 any_state = 1}", () => {
    expect(encode(DeleteActorRequestSchema, deleteActorRequest({ atespace: "as", name: "c" }, true))).toBe(`0a07 ${REF_AS_C} 1001`.replace(/\s+/g, ""));
    expect(encode(DeleteActorRequestSchema, deleteActorRequest({ atespace: "as", name: "c" }, false))).toBe(`0a07 ${REF_AS_C}`.replace(/\s+/g, ""));
  });

  it("CreateTag: {1 tag{1 metadata, 3 scope = ATESPACE (1), 4 source_actor}}", () => {
    // metadata{as, "fork-c"}: 0a 0c | 0a026173 1206666f726b2d63 ; scope: 18 01 ; source_actor{as, "p"}: 22 07 | 0a026173 120170
    const tag = "0a0c 0a026173 1206666f726b2d63 1801 2207 0a026173120170";
    expect(encode(CreateTagRequestSchema, createTagRequest({ atespace: "as", name: "fork-c" }, { atespace: "as", name: "p" }))).toBe(
      `0a19 ${tag}`.replace(/\s+/g, ""),
    );
  });

  it("DeleteTag: {1 tag: ObjectRef}", () => {
    expect(encode(DeleteTagRequestSchema, deleteTagRequest({ atespace: "as", name: "c" }))).toBe(`0a07 ${REF_AS_C}`.replace(/\s+/g, ""));
  });
});

describe("ateapi G3: response bytes", () => {
  // Actor{1 metadata{1 "as", 2 "c", 3 uid "u", 4 version 3}, 7 status{1 state RUNNING (2), 4 external_snapshot{1 "s3://x", 2 FULL}}}
  const ACTOR = "0a0c 0a026173 120163 1a0175 2003  3a0e 0802 220a 0a0673333a2f2f78 1001";

  it("Actor: metadata is field 1, status field 7; state, snapshot handle and scope read back", () => {
    const a = fromBinary(ActorSchema, bytes(ACTOR));
    expect(a.metadata).toMatchObject({ atespace: "as", name: "c", uid: "u", version: 3n });
    expect(a.status?.state).toBe(ActorState.RUNNING);
    expect(a.status?.externalSnapshot?.snapshotUri).toBe("s3://x");
    expect(a.status?.externalSnapshot?.contentScope).toBe(SnapshotContentScope.FULL);
  });

  it("ResumeActorResponse: {1 actor, 2 resumed}", () => {
    const r = fromBinary(ResumeActorResponseSchema, bytes(`0a1e ${ACTOR} 1001`));
    expect(r.resumed).toBe(true);
    expect(r.actor?.metadata?.name).toBe("c");
  });

  it("Tag: status{1 snapshot{1 uri}, 2 actor_template_uid} is field 2, scope 3, source_actor 4", () => {
    // metadata{as, "g"} 0a07 0a026173120167 ; status 12 0c | 0a05 0a0374 3a2f (snapshot uri "t:/") 1203 747075 ("tpu") ; scope 1801 ; source 2207 0a026173120170
    const t = fromBinary(TagSchema, bytes("0a07 0a026173120167 120c 0a05 0a03743a2f 1203747075 1801 2207 0a026173120170"));
    expect(t.metadata?.name).toBe("g");
    expect(t.status?.snapshot?.snapshotUri).toBe("t:/");
    expect(t.status?.actorTemplateUid).toBe("tpu");
    expect(t.scope).toBe(TagScope.ATESPACE);
    expect(t.sourceActor?.name).toBe("p");
  });

  it("enums: the G3 numbers (CRASHED 7, DELETING 8, REVERTING 9; TagScope 0 is UNSPECIFIED)", () => {
    expect([ActorState.SUSPENDED, ActorState.CRASHED, ActorState.DELETING, ActorState.REVERTING]).toEqual([4, 7, 8, 9]);
    expect([TagScope.UNSPECIFIED, TagScope.ATESPACE, TagScope.PUBLISHED]).toEqual([0, 1, 2]);
    expect(SnapshotContentScope.DATA).toBe(2);
  });
});

describe("ateapi G3: unknown fields", () => {
  let standin: Standin;
  beforeAll(async () => {
    standin = await startStandin({ templates: { counter: HARNESSES.counter } });
  });
  afterAll(async () => {
    await standin?.close();
  });

  it("stand-in: a request carrying a field the pinned server does not know is INVALID_ARGUMENT (a G1 client's boot flag)", async () => {
    const client = createClient(Control, createGrpcTransport({ baseUrl: standin.url }));
    const req = create(ResumeActorRequestSchema, { actor: { atespace: "agentsessions", name: "c" } });
    // Field 2, varint 1: what a G1/G2 client sends as `boot: true`.
    req.$unknown = [{ no: 2, wireType: 0, data: new Uint8Array([1]) }];
    const e = await client.resumeActor(req).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(e?.code).toBe(Code.InvalidArgument);
    expect(e?.rawMessage).toContain("unknown field");
    expect(standin.calls).toEqual([]);
  });
});
