/**
 * SessionsClient.get, list, suspend, resume, cancel and delete read their answers off the wire
 * (sdk/unary.ts): against the shared wrangler dev, their Sessions and refusals must be connect-es's
 * own (client.raw, the reference); against a stand-in server, the request is a plain binary
 * Connect unary call carrying the token; an answer that is not a Session is INTERNAL, and an HTTP
 * error or no server at all is the error connect-es gives.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, inject, it } from "vitest";
import { GetSessionRequestSchema, type Session, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { SessionsClient } from "../../../sdk/client.js";

const client = new SessionsClient({ server: inject("serverUrl") });

const hex = (s: Session) => Buffer.from(toBinary(SessionSchema, s)).toString("hex");

/** The call's Session in hex, or its error's code and message. */
async function outcome(p: Promise<Session>): Promise<{ session?: string; error?: { code: Code; message: string } }> {
  try {
    return { session: hex(await p) };
  } catch (e) {
    const err = ConnectError.from(e);
    return { error: { code: err.code, message: err.rawMessage } };
  }
}

describe("unary calls off the wire", () => {
  it("get: the Session connect-es decodes, byte for byte; refusals with its code and message", async () => {
    const uid = (await client.create({ name: "wire-get", labels: { a: "b" } })).metadata!.uid;
    await client.exec({ session: uid, inputs: ["hello"] });
    const got = await outcome(client.get(uid));
    expect(got.session).toBeDefined();
    expect(got).toEqual(await outcome(client.raw.getSession({ uid })));
    for (const bad of ["", "not a uid", "sess-000000000000000000000000"]) {
      const wire = await outcome(client.get(bad));
      expect(wire.error?.code).toBe(bad === "" ? Code.InvalidArgument : Code.NotFound);
      expect(wire).toEqual(await outcome(client.raw.getSession({ uid: bad })));
    }
  });

  it("suspend, resume, an idle cancel and delete: the same answers as connect-es's on two like sessions", async () => {
    const run = async (raw: boolean) => {
      const uid = (await client.create({ name: "wire-ops" })).metadata!.uid;
      await client.exec({ session: uid, inputs: ["hello"] });
      const steps: (() => Promise<Session>)[] = raw
        ? [
            () => client.raw.suspend({ session: uid }),
            () => client.raw.resume({ session: uid }),
            () => client.raw.cancel({ session: uid, executionId: "", reason: "" }),
            () => client.raw.deleteSession({ uid }),
            () => client.raw.getSession({ uid }),
          ]
        : [() => client.suspend(uid), () => client.resume(uid), () => client.cancel(uid), () => client.delete(uid), () => client.get(uid)];
      const out = [];
      // One at a time, in order (each step sees the last one's effect).
      for (const step of steps) {
        const o = await outcome(step());
        const s = o.session ? fromBinary(SessionSchema, Buffer.from(o.session, "hex")) : undefined;
        out.push(
          s ? { lastSeq: s.lastSeq, compute: s.computeState, exec: s.execState } : { error: o.error?.code, message: o.error?.message.replace(uid, "<uid>") },
        );
      }
      return out;
    };
    const wire = await run(false);
    expect(wire).toEqual(await run(true));
    expect(wire.map((s) => ("error" in s ? s.error : s.lastSeq))).toEqual([6n, 7n, Code.FailedPrecondition, 7n, Code.NotFound]);
  });

  it("create: the Session connect-es's create gives, bar its uid and times; an unknown harness refused alike", async () => {
    const o = { project: "wire-create", name: "c", harness: "echo", labels: { k: "v" }, annotations: { a: "b" } };
    const bare = (s: Session) => hex({ ...s, metadata: { ...s.metadata!, uid: "", createTime: undefined, updateTime: undefined } });
    const wire = await client.create(o);
    const reference = await client.raw.createSession({
      session: { metadata: { project: o.project, name: o.name }, harness: o.harness, labels: o.labels, annotations: o.annotations },
    });
    expect(bare(wire)).toEqual(bare(reference));
    expect(hex(await client.get(wire.metadata!.uid))).toBe(hex(wire));
    const refused = await outcome(client.create({ harness: "no-such-harness" }));
    expect(refused.error?.code).toBe(Code.InvalidArgument);
    expect(refused).toEqual(await outcome(client.raw.createSession({ session: { harness: "no-such-harness" } })));
  });

  it("list: every session of a project, page by page, as connect-es's pages give them", async () => {
    const project = `wire-list-${Date.now().toString(36)}`;
    for (let i = 0; i < 7; i++) await client.create({ project, name: `s${i}` });
    const wire: string[] = [];
    for await (const s of client.list({ project, pageSize: 3 })) wire.push(hex(s));
    const reference: string[] = [];
    let pageToken = "";
    do {
      const page = await client.raw.listSessions({ project, pageSize: 3, pageToken });
      reference.push(...page.sessions.map(hex));
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(wire).toHaveLength(7);
    expect(wire).toEqual(reference);
  });

  it("against a stand-in: one binary unary POST with the token; a non-Session answer is INTERNAL, a 503 UNAVAILABLE, no server connect-es's UNKNOWN", async () => {
    const seen: { url: string; headers: IncomingHttpHeaders; body: Buffer }[] = [];
    let answer: { status: number; type: string; body: Uint8Array } = { status: 200, type: "application/proto", body: new Uint8Array([0xff, 0xff]) };
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (c: Buffer) => parts.push(c));
      req.on("end", () => {
        seen.push({ url: req.url ?? "", headers: req.headers, body: Buffer.concat(parts) });
        res.writeHead(answer.status, { "content-type": answer.type });
        res.end(answer.body);
      });
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const stand = new SessionsClient({ server: url, token: "t0ken" });
      const bad = await outcome(stand.get("sess-111111111111111111111111"));
      expect(bad.error?.code).toBe(Code.Internal);
      expect(seen[0]!.url).toBe("/agentsessions.v1.Sessions/GetSession");
      expect(seen[0]!.headers["content-type"]).toBe("application/proto");
      expect(seen[0]!.headers.authorization).toBe("Bearer t0ken");
      expect(fromBinary(GetSessionRequestSchema, seen[0]!.body)).toEqual(create(GetSessionRequestSchema, { uid: "sess-111111111111111111111111" }));

      const session = create(SessionSchema, { harness: "echo", lastSeq: 9n });
      answer = { status: 200, type: "application/proto", body: toBinary(SessionSchema, session) };
      expect(hex(await stand.get("sess-111111111111111111111111"))).toBe(hex(session));

      answer = { status: 503, type: "text/plain", body: new TextEncoder().encode("busy") };
      const busy = await outcome(stand.get("sess-111111111111111111111111"));
      expect(busy.error?.code).toBe(Code.Unavailable);
      expect(busy).toEqual(await outcome(stand.raw.getSession({ uid: "sess-111111111111111111111111" })));
    } finally {
      await new Promise<void>((ok) => server.close(() => ok()));
    }
    // Nothing answers: connect-es's own error (UNKNOWN "fetch failed"), which exec's re-attach does not retry.
    const nobody = new SessionsClient({ server: url });
    const gone = await outcome(nobody.get("sess-111111111111111111111111"));
    expect(gone.error?.code).toBe(Code.Unknown);
    expect(gone).toEqual(await outcome(nobody.raw.getSession({ uid: "sess-111111111111111111111111" })));
  });
});
