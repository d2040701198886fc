/**
 * Fixed inputs that the fuzz suite (fuzz.test.ts) found failing, one test each, so they stay fixed
 * without a storm: values past SQLite's 2 MB limit that surfaced as INTERNAL (against the shared
 * `wrangler dev`), and DeleteSession racing an operation that was waiting at an await (in process,
 * on sql.js, with the wait under the test's control), and malformed bodies connect-es answers as
 * INTERNAL, refused first by worker/request-check.ts.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, inject, it } from "vitest";
import { SessionSchema, Sessions } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../../../proto/ids.js";
import { userText } from "../../../proto/messages.js";
import { createModelInvoker } from "../../../objects/controller/models.js";
import { SessionHost } from "../../../objects/session/facade.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import { SessionsClient } from "../../../sdk/client.js";
import { createTestDb, eraseTestDb } from "../support/sqljs-db.js";
import { execReq } from "../support/session-fixture.js";
import { judge, send, type Verdict } from "./oracle.js";
import { envelope } from "./wire.js";

const json = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
/** Over the 2 MB a Durable Object's SQLite takes in one value (2.2 MB still passes as a parameter). */
const HUGE = "x".repeat(3_000_000);

async function call(method: string, body: unknown): Promise<Verdict> {
  const m = Sessions.methods.find((x) => x.name === method)!;
  const streaming = m.methodKind === "server_streaming";
  const a = await send(
    inject("serverUrl"),
    `/agentsessions.v1.Sessions/${method}`,
    streaming ? envelope(0, json(body)) : json(body),
    streaming ? "application/connect+json" : "application/json",
  );
  return judge(m, a);
}

describe("fuzz regressions: values past the storage limits", () => {
  it("CreateSession: metadata over the limit is RESOURCE_EXHAUSTED, not INTERNAL (SQLITE_TOOBIG)", async () => {
    for (const session of [{ labels: { a: HUGE } }, { metadata: { name: HUGE } }, { model: HUGE }, { annotations: { a: "y".repeat(40_000) } }]) {
      const v = await call("CreateSession", { session });
      expect(v.findings).toEqual([]);
      expect(v.outcome).toBe("resource_exhausted");
      expect(v.detail).toContain("over the limit of 32768");
    }
  });

  it("Fork: labels or a child name over the metadata limit are RESOURCE_EXHAUSTED, and no child is left behind", async () => {
    const client = new SessionsClient({ server: inject("serverUrl") });
    const uid = (await client.create({ project: "fuzz-regression" })).metadata!.uid;
    await client.exec({ session: uid, inputs: ["hi"] });
    const before = (await call("ListSessions", { project: "fuzz-regression" })).messages[0] as { sessions: unknown[] };
    for (const body of [
      { session: uid, labels: { a: HUGE } },
      { session: uid, childNames: [HUGE] },
      { session: uid, count: 128, labels: { a: "y".repeat(300_000) } },
    ]) {
      const v = await call("Fork", body);
      expect(v.findings).toEqual([]);
      expect(v.outcome).toBe("resource_exhausted");
    }
    const after = (await call("ListSessions", { project: "fuzz-regression" })).messages[0] as { sessions: unknown[] };
    expect(after.sessions.length).toBe(before.sessions.length);
  });

  it("ListSessions: a project over 2 MB (3 MB) is an empty page, not INTERNAL", async () => {
    const v = await call("ListSessions", { project: HUGE });
    expect(v.findings).toEqual([]);
    expect(v.outcome).toBe("ok");
    expect(v.messages[0]).toMatchObject({ sessions: [], nextPageToken: "" });
  });

  it("Exec: a harness override over 2 MB (3 MB) is INVALID_ARGUMENT (unknown harness), not INTERNAL", async () => {
    const uid = (await new SessionsClient({ server: inject("serverUrl") }).create({})).metadata!.uid;
    const v = await call("Exec", { session: uid, harness: HUGE, inputs: [{ role: "user", parts: [{ text: { text: "x" } }] }] });
    expect(v.findings).toEqual([]);
    expect(v.outcome).toBe("invalid_argument");
  });
});

describe("fuzz regressions: DeleteSession racing an operation that is waiting", () => {
  /** A SessionHost whose remote-harness lookup (a tunnel status RPC in workerd) waits for `release`. */
  function hostWithSlowLookup() {
    const db = createTestDb();
    let release!: () => void;
    const lookup = new Promise<void>((ok) => (release = ok));
    const host = new SessionHost({
      db,
      now: () => 1_700_000_000_000,
      models: (sessionModel) => createModelInvoker({ sessionModel }),
      directory: async () => undefined,
      harnesses: { get: () => undefined, names: () => [] },
      remote: async () => {
        await lookup;
        return { harness: echoHarness };
      },
      erase: async () => eraseTestDb(db),
      log: () => undefined,
    });
    return { host, release };
  }

  async function created(host: SessionHost): Promise<string> {
    const uid = mintSessionUid();
    const r = await host.create({ tenant: "default", uid, statics: create(SessionSchema, { metadata: { project: "default" }, harness: "remote-h" }) });
    expect(r.ok).toBe(true);
    return uid;
  }

  it("exec: erased while it looked up its harness, it answers NOT_FOUND, not a SQLite error", async () => {
    const { host, release } = hostWithSlowLookup();
    const uid = await created(host);
    const exec = host.exec(execReq({ session: uid, inputs: [userText("x")] }));
    expect((await host.delete(async () => undefined)).ok).toBe(true);
    release();
    expect(await exec).toMatchObject({ ok: false, reason: "session_not_found" });
  });

  it("fork: erased while the parent looked up its harness, the fork source is NOT_FOUND", async () => {
    const { host, release } = hostWithSlowLookup();
    await created(host);
    const source = host.forkSource(0n);
    expect((await host.delete(async () => undefined)).ok).toBe(true);
    release();
    expect(await source).toMatchObject({ ok: false, reason: "session_not_found" });
  });

  it("suspend and cancel: while a delete writes its tombstone, Suspend is busy, Cancel finds nothing, the delete completes", async () => {
    const { host, release } = hostWithSlowLookup();
    release();
    await created(host);
    let tombstoned!: () => void;
    const tombstone = new Promise<void>((ok) => (tombstoned = ok));
    const deleting = host.delete(() => tombstone);
    expect(await host.suspend()).toMatchObject({ ok: false, reason: "session_busy" });
    // Cancel waits for whatever holds the guard, here the delete: then there is nothing left.
    const canceling = host.cancel("", "");
    tombstoned();
    expect((await deleting).ok).toBe(true);
    expect(await canceling).toMatchObject({ ok: false, reason: "session_not_found" });
    expect(host.get()).toMatchObject({ ok: false, reason: "session_not_found" });
  });
});

// connect-es answers both as INTERNAL; worker/request-check.ts refuses them first, in the caller's protocol.
describe("fuzz regressions: malformed bodies connect-es would call INTERNAL", () => {
  const badBinary = new Uint8Array([0x0a, ...Array<number>(11).fill(0xff)]);

  it("GetSession: a binary body that does not decode (a varint of 11 bytes) is INVALID_ARGUMENT", async () => {
    const v = judge(Sessions.method.getSession, await send(inject("serverUrl"), "/agentsessions.v1.Sessions/GetSession", badBinary, "application/proto"));
    expect(v.findings).toEqual([]);
    expect(v.outcome).toBe("invalid_argument");
    expect(v.detail).toContain("not a valid binary agentsessions.v1.GetSessionRequest");
  });

  it("Replay: an envelope flagged compressed with no encoding is INVALID_ARGUMENT in an end-stream frame", async () => {
    const a = await send(inject("serverUrl"), "/agentsessions.v1.Sessions/Replay", envelope(0x01, json({})), "application/connect+json");
    expect(a.status).toBe(200);
    expect(a.body[0]).toBe(0x02);
    expect(JSON.parse(new TextDecoder().decode(a.body.subarray(5)))).toMatchObject({ error: { code: "invalid_argument" } });
    expect(judge(Sessions.method.replay, a).findings).toEqual([]);
  });

  it("Exec over Connect streaming and GetSession over gRPC-Web: an undecodable message is INVALID_ARGUMENT", async () => {
    const exec = await send(inject("serverUrl"), "/agentsessions.v1.Sessions/Exec", envelope(0, badBinary), "application/connect+proto");
    const end = JSON.parse(new TextDecoder().decode(exec.body.subarray(5))) as { error: { code: string; message: string } };
    expect(end.error.code).toBe("invalid_argument");
    expect(end.error.message).toContain("agentsessions.v1.ExecRequest");
    const web = await send(inject("serverUrl"), "/agentsessions.v1.Sessions/GetSession", envelope(0, badBinary), "application/grpc-web+proto");
    expect(web.status).toBe(200);
    expect(web.headers.get("grpc-status")).toBe("3");
    expect(decodeURIComponent(web.headers.get("grpc-message") ?? "")).toContain("agentsessions.v1.GetSessionRequest");
  });

  it("plain gRPC (whose status needs HTTP trailers a Worker cannot send) is UNIMPLEMENTED, trailers-only, naming gRPC-Web", async () => {
    const ok = new Uint8Array([0x0a, 0x03, 0x61, 0x62, 0x63]);
    for (const ct of ["application/grpc", "application/grpc+proto"]) {
      const a = await send(inject("serverUrl"), "/agentsessions.v1.Sessions/GetSession", envelope(0, ok), ct);
      expect(a.status).toBe(200);
      expect(a.headers.get("grpc-status")).toBe("12");
      expect(decodeURIComponent(a.headers.get("grpc-message") ?? "")).toContain("use gRPC-Web");
    }
  });

  it("a well-formed binary request still reaches the handler", async () => {
    const v = judge(
      Sessions.method.getSession,
      await send(inject("serverUrl"), "/agentsessions.v1.Sessions/GetSession", new Uint8Array([0x0a, 0x03, 0x61, 0x62, 0x63]), "application/proto"),
    );
    expect(v.findings).toEqual([]);
    expect(v.outcome).toBe("not_found"); // the handler looked "abc" up
    expect(v.detail).not.toContain("not a valid binary");
  });
});
