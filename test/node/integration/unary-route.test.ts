/**
 * The binary unary fast path (worker/unary-route.ts) against the router, on a real `wrangler dev`
 * at LOG_LEVEL=info: a plain `application/proto` CreateSession, GetSession, DeleteSession,
 * Suspend, Resume or Cancel is answered with the bytes its session object encoded, and a ListSessions with its page
 * written around the Sessions' bytes; the same call with a deadline header (or in JSON) goes
 * through connect-es. Both must answer the same bytes, refuse with the same status, code and
 * words, and write one `rpc` line for the request.
 */
import { create, type DescMessage, fromBinary, type MessageInitShape, toBinary, toJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CancelRequestSchema,
  ComputeState,
  CreateSessionRequestSchema,
  DeleteSessionRequestSchema,
  GetSessionRequestSchema,
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
  ResumeRequestSchema,
  type Session,
  SessionSchema,
  SuspendRequestSchema,
} from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { type Host, startHost } from "../support/host.js";
import { rpcLineOf } from "../support/rpc-lines.js";

let host: Host;
beforeAll(async () => {
  host = await startHost({ vars: { LOG_LEVEL: "info" } });
}, 120_000);
afterAll(async () => {
  await host?.stop();
});

interface Answer {
  status: number;
  contentType: string;
  /** The fast path answers one body of known length; the router's answer is chunked. */
  contentLength: string | null;
  bytes: Uint8Array;
}

/** A binary Connect unary call; `router` adds a deadline header, which only the router serves. */
async function call<Desc extends DescMessage>(
  method: string,
  schema: Desc,
  init: MessageInitShape<Desc>,
  o: { router?: boolean; requestId?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/proto" };
  if (o.router) headers["connect-timeout-ms"] = "30000";
  if (o.requestId) headers["x-request-id"] = o.requestId;
  const res = await fetch(`${host.url}/agentsessions.v1.Sessions/${method}`, {
    method: "POST",
    headers,
    body: toBinary(schema, create(schema, init)) as Uint8Array<ArrayBuffer>,
  });
  return {
    status: res.status,
    contentType: res.headers.get("content-type") ?? "",
    contentLength: res.headers.get("content-length"),
    bytes: new Uint8Array(await res.arrayBuffer()),
  };
}

const session = (a: Answer) => {
  expect(a.status).toBe(200);
  expect(a.contentType).toBe("application/proto");
  return fromBinary(SessionSchema, a.bytes);
};
const error = (a: Answer) => ({ status: a.status, contentType: a.contentType, body: JSON.parse(new TextDecoder().decode(a.bytes)) as unknown });

/** Both ways in turn: the fast path's answer and the router's. */
async function both<Desc extends DescMessage>(method: string, schema: Desc, init: MessageInitShape<Desc>): Promise<[Answer, Answer]> {
  return [await call(method, schema, init), await call(method, schema, init, { router: true })];
}

const lineOf = (requestId: string) => rpcLineOf(host.server, requestId);

describe("binary unary calls without the router", () => {
  it("GetSession: the object's bytes are the router's answer byte for byte, and JSON gives the same Session", async () => {
    const uid = (await host.client.create({ harness: "echo", name: "unary-get", labels: { team: "a" } })).metadata!.uid;
    await host.client.exec({ session: uid, inputs: ["hello"] });
    const [fast, routed] = await both("GetSession", GetSessionRequestSchema, { uid });
    expect(session(fast).metadata?.uid).toBe(uid);
    expect(session(fast).lastSeq).toBe(5n);
    expect(fast.bytes).toEqual(routed.bytes);
    // Which path answered: only the fast path knows its answer's length up front.
    expect([fast.contentLength, routed.contentLength]).toEqual([String(fast.bytes.length), null]);
    expect(toJson(SessionSchema, session(fast))).toEqual(toJson(SessionSchema, await host.client.get(uid)));
  });

  it("refusals carry the router's status, code and words: an empty uid, a malformed one, an unknown session", async () => {
    for (const uid of ["", "not-a-uid", "sess-000000000000000000000000"]) {
      const [fast, routed] = await both("GetSession", GetSessionRequestSchema, { uid });
      expect(error(fast)).toEqual(error(routed));
      expect(fast.status).toBe(uid === "" ? 400 : 404);
    }
    const [fast, routed] = await both("Cancel", CancelRequestSchema, { session: "" });
    expect(error(fast)).toEqual(error(routed));
    expect(fast.status).toBe(400);
  });

  it("Suspend, Resume and an idle Cancel answer as the router does; Delete answers the final Session and the uid is gone", async () => {
    const uids = [];
    for (let i = 0; i < 2; i++) {
      const uid = (await host.client.create({ harness: "echo" })).metadata!.uid;
      await host.client.exec({ session: uid, inputs: ["hello"] });
      uids.push(uid);
    }
    // The same steps on two like sessions, one through each path.
    const states = [];
    for (const [i, uid] of uids.entries()) {
      const router = i === 1;
      const suspend = await call("Suspend", SuspendRequestSchema, { session: uid }, { router });
      expect(suspend.contentLength).toBe(router ? null : String(suspend.bytes.length));
      const suspended = session(suspend);
      const resumed = session(await call("Resume", ResumeRequestSchema, { session: uid }, { router }));
      const cancel = error(await call("Cancel", CancelRequestSchema, { session: uid }, { router }));
      states.push({ suspended: [suspended.computeState, suspended.lastSeq], resumed: [resumed.computeState, resumed.lastSeq], cancel });
    }
    expect(states[0]).toEqual(states[1]);
    expect(states[0]!.suspended).toEqual([ComputeState.COMPUTE_COLD, 6n]);
    expect(states[0]!.cancel.status).toBe(400);

    const deleted = session(await call("DeleteSession", DeleteSessionRequestSchema, { uid: uids[0]! }));
    expect(deleted.metadata?.uid).toBe(uids[0]);
    expect(deleted.lastSeq).toBe(7n);
    const [fast, routed] = await both("GetSession", GetSessionRequestSchema, { uid: uids[0]! });
    expect(fast.status).toBe(404);
    expect(error(fast)).toEqual(error(routed));
  });

  it("CreateSession: the new object's Session as the router's, bar its uid and times; a refusal in the router's words", async () => {
    const init = { session: { metadata: { project: "unary-create", name: "c" }, harness: "echo", labels: { k: "v" }, annotations: { a: "b" } } };
    const [fast, routed] = await both("CreateSession", CreateSessionRequestSchema, init);
    expect([fast.contentLength, routed.contentLength]).toEqual([String(fast.bytes.length), null]);
    const made = [session(fast), session(routed)];
    const bare = (s: Session) => toJson(SessionSchema, { ...s, metadata: { ...s.metadata!, uid: "", createTime: undefined, updateTime: undefined } });
    expect(bare(made[0]!)).toEqual(bare(made[1]!));
    expect(made[0]!.metadata!.uid).not.toBe(made[1]!.metadata!.uid);
    // The new session is there, as the fast path answered it.
    expect(toJson(SessionSchema, made[0]!)).toEqual(toJson(SessionSchema, await host.client.raw.getSession({ uid: made[0]!.metadata!.uid })));
    const [refused, refusedRouted] = await both("CreateSession", CreateSessionRequestSchema, { session: { harness: "no-such-harness" } });
    expect(refused.status).toBe(400);
    expect(error(refused)).toEqual(error(refusedRouted));
  });

  it("ListSessions: every page, its token and a live session's row are the router's answer byte for byte; a foreign token is refused alike", async () => {
    const project = `unary-list-${Date.now().toString(36)}`;
    for (let i = 0; i < 5; i++) await host.client.create({ project, harness: "echo", name: `s${i}` });
    // A session that just ran a turn: its row may be live, and then the session answers for it.
    const busy = (await host.client.create({ project, harness: "echo", name: "busy" })).metadata!.uid;
    await host.client.exec({ session: busy, inputs: ["hello"] });
    let pageToken = "";
    const seen: string[] = [];
    do {
      const [fast, routed] = await both("ListSessions", ListSessionsRequestSchema, { project, pageSize: 4, pageToken });
      expect(fast.status).toBe(200);
      expect(fast.bytes).toEqual(routed.bytes);
      expect([fast.contentLength, routed.contentLength]).toEqual([String(fast.bytes.length), null]);
      const page = fromBinary(ListSessionsResponseSchema, fast.bytes);
      seen.push(...page.sessions.map((s) => s.metadata!.name));
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(seen.sort()).toEqual(["busy", "s0", "s1", "s2", "s3", "s4"]);
    const [fast, routed] = await both("ListSessions", ListSessionsRequestSchema, { project, pageToken: "not-a-token" });
    expect(fast.status).toBe(400);
    expect(error(fast)).toEqual(error(routed));
  });

  it("each call writes one rpc line: the operation, its session and outcome, as the router's line", async () => {
    const uid = (await host.client.create({ harness: "echo" })).metadata!.uid;
    const id = `unary-${Date.now().toString(36)}`;
    session(await call("GetSession", GetSessionRequestSchema, { uid }, { requestId: `${id}-ok` }));
    await call("GetSession", GetSessionRequestSchema, { uid: "sess-000000000000000000000000" }, { requestId: `${id}-missing` });
    await call("GetSession", GetSessionRequestSchema, { uid }, { requestId: `${id}-router`, router: true });
    const pick = (l: Record<string, unknown>) => [l.operation, l.session, l.outcome, l.tenant];
    expect(pick(await lineOf(`${id}-ok`))).toEqual(["GetSession", uid, "ok", "default"]);
    expect(pick(await lineOf(`${id}-missing`))).toEqual(["GetSession", "sess-000000000000000000000000", "NotFound", "default"]);
    expect(pick(await lineOf(`${id}-router`))).toEqual(pick(await lineOf(`${id}-ok`)));
    // A new session's line names it, as the router's handler notes it.
    const made = session(await call("CreateSession", CreateSessionRequestSchema, { session: { harness: "echo" } }, { requestId: `${id}-create` }));
    expect(pick(await lineOf(`${id}-create`))).toEqual(["CreateSession", made.metadata!.uid, "ok", "default"]);
  });
});
