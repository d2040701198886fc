/**
 * The Worker's front door against a real `wrangler dev` with AUTH_MODE=keys (issue 11 §2, §3;
 * worker/rpc-entry.ts): a caller is authenticated from its headers before any body byte is read,
 * a body over MAX_REQUEST_BYTES is refused as soon as that is known, each refusal comes in the
 * caller's protocol, and no route tells an unauthenticated caller anything but "unauthenticated".
 *
 * The body tests speak HTTP over a raw socket and send none (or only the refused part) of the body
 * they declare: the answer can only arrive if the server did not wait for the rest. They send no
 * byte the server leaves unread: `wrangler dev`'s proxy sits between this socket and the Worker,
 * and a connection closed with unread bytes is reset, which that proxy can report as "Your worker
 * restarted mid-request" before the answer reaches it.
 */
import { createHash } from "node:crypto";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Host, startHost } from "../support/host.js";
import { isProxyRestart } from "../support/proxy-resend.js";

const TOKEN = "tok-front-door";
const LIMIT = 65536;
let host: Host;

beforeAll(async () => {
  const entry = { id: "k1", sha256: createHash("sha256").update(TOKEN).digest("hex"), tenant: "tenant-a", principal: "writer@a", roles: ["read", "write"] };
  host = await startHost({ vars: { AUTH_MODE: "keys", AUTH_KEYS: JSON.stringify([entry]), MAX_REQUEST_BYTES: String(LIMIT) }, token: TOKEN });
});

afterAll(async () => {
  await host?.stop();
});

interface RawAnswer {
  status: number;
  headers: string;
  body: string;
}

/**
 * Writes `head` (and `body`, if any) on a fresh connection and resolves with the first complete
 * HTTP response, leaving the rest of any declared body unsent.
 *
 * When the Worker refuses a body it will not read (declared far over the limit), workerd resets
 * the connection from `wrangler dev`'s proxy once the answer is written; if the reset reaches the
 * proxy before the answer does, the proxy's own fetch fails and it answers 503 "Your worker
 * restarted mid-request" (it says so for any failed POST to a path other than `/`). That answer
 * never came from the Worker, and the Cloudflare edge in front of a deployed Worker has no such
 * proxy, so it is asked again (a few times at most); any other answer counts as it is.
 */
async function rawRequest(head: string, body: Buffer = Buffer.alloc(0)): Promise<RawAnswer> {
  for (let attempt = 1; ; attempt++) {
    const r = await rawRequestOnce(head, body);
    if (attempt >= 5 || !isProxyRestart(r.status, r.body)) return r;
  }
}

function rawRequestOnce(head: string, body: Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const s = connect(host.server.port, "127.0.0.1");
    let text = Buffer.alloc(0);
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error("no answer within 30 s: the server waited for the body"));
    }, 30_000);
    s.on("data", (d) => {
      text = Buffer.concat([text, d]);
      const raw = text.toString("latin1");
      const end = raw.indexOf("\r\n\r\n");
      if (end < 0) return;
      const headers = raw.slice(0, end);
      const length = Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? 0);
      if (text.length < end + 4 + length) return;
      clearTimeout(timer);
      s.destroy();
      resolve({ status: Number(headers.split(" ")[1]), headers, body: text.subarray(end + 4, end + 4 + length).toString("latin1") });
    });
    s.on("error", () => undefined);
    s.write(head);
    if (body.length > 0) s.write(body);
  });
}

const post = (path: string, headers: string) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`;
const CREATE = "/agentsessions.v1.Sessions/CreateSession";

describe("the front door: before the body is read", () => {
  it("rpc-entry: a request without a token is refused unauthenticated with none of its declared 512 MiB body sent", async () => {
    const r = await rawRequest(post(CREATE, "Content-Type: application/json\r\nContent-Length: 536870912\r\n"));
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body)).toMatchObject({ code: "unauthenticated" });
  });

  it("rpc-entry: an authenticated body declared far over MAX_REQUEST_BYTES is refused resource_exhausted before it is sent", async () => {
    const r = await rawRequest(post(CREATE, `Authorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 536870912\r\n`));
    expect(r.status).toBe(429);
    const err = JSON.parse(r.body) as { code: string; message: string };
    expect(err.code).toBe("resource_exhausted");
    expect(err.message).toContain(`${LIMIT} bytes (MAX_REQUEST_BYTES)`);
  });

  it("rpc-entry: a body just over the limit, sent in full, is refused resource_exhausted on a connection that stays usable", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const send = (body: string) =>
        new Promise<{ status: number; text: string; reused: boolean }>((resolve, reject) => {
          const req = request(
            `${host.url}${CREATE}`,
            { method: "POST", agent, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } },
            (res) => {
              let text = "";
              res.on("data", (d) => (text += d));
              res.on("end", () => resolve({ status: res.statusCode ?? 0, text, reused: req.reusedSocket }));
            },
          );
          req.on("error", reject);
          req.end(body);
        });
      const big = await send(JSON.stringify({ session: { metadata: { name: "x".repeat(LIMIT) } } }));
      expect(big.status).toBe(429);
      expect(JSON.parse(big.text)).toMatchObject({ code: "resource_exhausted" });
      const next = await send("{}");
      expect(next.status).toBe(200);
      expect(next.reused).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it("rpc-entry: a chunked body is refused as soon as it passes the limit, with the rest never sent", async () => {
    const chunk = Buffer.alloc(LIMIT + 1, 32);
    const r = await rawRequest(
      post(CREATE, `Authorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n`),
      Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]),
    );
    expect(r.status).toBe(429);
    expect(JSON.parse(r.body)).toMatchObject({ code: "resource_exhausted" });
  });

  it("rpc-entry: a streaming call is refused in its own protocol: a Connect end-stream frame, or a gRPC-Web trailer frame", async () => {
    const exec = "/agentsessions.v1.Sessions/Exec";
    const connectStream = await rawRequest(post(exec, "Content-Type: application/connect+json\r\nContent-Length: 536870912\r\n"));
    expect(connectStream.status).toBe(200);
    expect(connectStream.body).toContain('"code":"unauthenticated"');
    const grpcWeb = await rawRequest(post(exec, "Content-Type: application/grpc-web+proto\r\nContent-Length: 536870912\r\n"));
    expect(grpcWeb.status).toBe(200);
    // The status rides in a trailer frame (flag 0x80) of the body.
    expect(grpcWeb.body.charCodeAt(0)).toBe(0x80);
    expect(grpcWeb.body).toMatch(/grpc-status: 16\r\n/);
  });

  it("rpc-entry: after a refusal the next request works, and a kept-alive connection serves request after request", async () => {
    await rawRequest(post(CREATE, "Content-Type: application/json\r\nContent-Length: 536870912\r\n"));
    const s = await host.client.create({ name: "after a refusal" });
    expect(s.metadata?.uid).toMatch(/^sess-/);
    // A kept-alive connection: one socket, three requests in turn, each answered on it.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const reused: boolean[] = [];
      for (let i = 0; i < 3; i++) {
        const status = await new Promise<number>((resolve, reject) => {
          const req = request(
            `${host.url}/agentsessions.v1.Sessions/ListSessions`,
            { method: "POST", agent, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } },
            (res) => {
              res.resume();
              res.on("end", () => resolve(res.statusCode ?? 0));
            },
          );
          req.on("error", reject);
          reused.push(req.reusedSocket);
          req.end("{}");
        });
        expect(status).toBe(200);
      }
      expect(reused).toEqual([false, true, true]);
    } finally {
      agent.destroy();
    }
  });
});

describe("the front door: unauthenticated is decided first, for every route", () => {
  it("rpc-entry: a malformed body with no token answers unauthenticated, not invalid_argument", async () => {
    const res = await fetch(`${host.url}${CREATE}`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"session": 7' });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe("unauthenticated");
  });

  it("rpc-entry: an unknown route and the harness tunnel answer an unauthenticated caller unauthenticated; /healthz and the page stay public", async () => {
    for (const path of ["/agentsessions.v1.Sessions/NoSuchMethod", "/no/such/route", "/harness/v1/connect?name=x"]) {
      const res = await fetch(`${host.url}${path}`, { method: path.startsWith("/harness") ? "GET" : "POST" });
      expect(res.status, path).toBe(401);
      expect(((await res.json()) as { code: string }).code, path).toBe("unauthenticated");
    }
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${host.url}/`)).status).toBe(200);
  });
});
