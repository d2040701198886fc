/**
 * Connect GET against the shared `wrangler dev`: GetSession and ListSessions are marked
 * `idempotency_level = NO_SIDE_EFFECTS` (proto/agentsessions/v1/session.proto), so they answer a
 * bodiless GET (`?connect=v1&encoding=json&message=…`), as curl and HTTP caches use them; methods
 * with effects still refuse GET. A binary GET message that does not decode is invalid_argument
 * (worker/request-check.ts), as a malformed POST body is. The option changes no wire byte.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { describe, expect, inject, it } from "vitest";
import { SessionsClient } from "../../../sdk/client.js";
import { file_agentsessions_v1_session, GetSessionRequestSchema, Sessions, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";

const base = () => inject("serverUrl");
const getUrl = (method: string, message: unknown) =>
  `${base()}/agentsessions.v1.Sessions/${method}?connect=v1&encoding=json&message=${encodeURIComponent(JSON.stringify(message))}`;

async function createNamed(name: string): Promise<string> {
  const res = await fetch(`${base()}/agentsessions.v1.Sessions/CreateSession`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ session: { metadata: { project: "get-demo", name } } }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { metadata: { uid: string } }).metadata.uid;
}

describe("Connect GET", () => {
  it("GetSession: a bodiless GET returns the session as JSON", async () => {
    const uid = await createNamed("by-get");
    const res = await fetch(getUrl("GetSession", { uid }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const s = (await res.json()) as { metadata: { uid: string; name: string } };
    expect(s.metadata).toMatchObject({ uid, name: "by-get" });
  });

  it("ListSessions: a GET lists the project, and an unknown uid by GET is not_found", async () => {
    const uid = await createNamed("listed");
    const res = await fetch(getUrl("ListSessions", { project: "get-demo" }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { sessions: { metadata: { uid: string } }[] };
    expect(body.sessions.map((s) => s.metadata.uid)).toContain(uid);
    const missing = await fetch(getUrl("GetSession", { uid: "sess-000000000000000000000000" }));
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { code: string }).code).toBe("not_found");
  });

  it("GetSession: a binary GET (encoding=proto, base64) is served, and one that does not decode is invalid_argument, not internal", async () => {
    const uid = await createNamed("binary");
    const message = Buffer.from(toBinary(GetSessionRequestSchema, create(GetSessionRequestSchema, { uid }))).toString("base64url");
    const ok = await fetch(`${base()}/agentsessions.v1.Sessions/GetSession?connect=v1&encoding=proto&base64=1&message=${message}`);
    expect(ok.status).toBe(200);
    expect(fromBinary(SessionSchema, new Uint8Array(await ok.arrayBuffer())).metadata?.uid).toBe(uid);
    for (const bad of ["__8", "not*base64"]) {
      const res = await fetch(`${base()}/agentsessions.v1.Sessions/GetSession?connect=v1&encoding=proto&base64=1&message=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
    }
  });

  it("CreateSession: a method with effects refuses GET", async () => {
    const res = await fetch(getUrl("CreateSession", { session: {} }));
    expect(res.status).toBe(405);
  });

  it("connect-web with useHttpGet: the SDK's transport reads sessions by GET", async () => {
    const uid = await createNamed("sdk-get");
    const methods: string[] = [];
    const client = createClient(
      Sessions,
      createConnectTransport({
        baseUrl: base(),
        useHttpGet: true,
        fetch: (input, init) => {
          methods.push(init?.method ?? "GET");
          return fetch(input, init);
        },
      }),
    );
    expect((await client.getSession({ uid })).metadata?.uid).toBe(uid);
    expect(methods).toEqual(["GET"]);
  });

  it("SessionsClient with httpGet: get and list go out as GET, in binary", async () => {
    const uid = await createNamed("client-get");
    const methods: string[] = [];
    const client = new SessionsClient({
      server: base(),
      httpGet: true,
      fetch: (input, init) => {
        methods.push(`${init?.method ?? "GET"} ${new URL(String(input)).searchParams.get("encoding") ?? ""}`);
        return fetch(input, init);
      },
    });
    expect((await client.get(uid)).metadata?.name).toBe("client-get");
    for await (const _ of client.list({ project: "get-demo" })) void _;
    expect(methods).toEqual(["GET proto", "GET proto"]);
  });

  it("idempotency_level: only GetSession and ListSessions carry it, and a Session's bytes do not change", () => {
    const marked = Sessions.methods.filter((m) => m.idempotency !== undefined && m.idempotency !== 0).map((m) => m.name);
    expect(marked).toEqual(["GetSession", "ListSessions"]);
    // Options are descriptor metadata, not fields: the message encodes exactly as before.
    const bytes = toBinary(SessionSchema, create(SessionSchema, { lastSeq: 5n, harness: "echo" }));
    expect(Buffer.from(bytes).toString("hex")).toBe("12046563686f2805");
    expect(file_agentsessions_v1_session.messages.find((m) => m.name === "Session")?.fields.length).toBe(14);
  });
});
