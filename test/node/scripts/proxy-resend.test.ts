/**
 * The node project's fetch sends again a request that `wrangler dev`'s proxy answered 503
 * "restarted mid-request" (test/node/support/proxy-resend.ts), and nothing else: checked against a
 * real HTTP stand-in that answers like the proxy, through Node's own fetch.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { resendingFetch, unwrappedFetch } from "../support/proxy-resend.js";

const PROXY_503 = "Your worker restarted mid-request. Please try sending the request again. Only GET or HEAD requests are retried automatically.";

interface StandIn {
  url: string;
  /** Each request's method and body, in the order received. */
  seen: { method: string; body: string }[];
  server: Server;
}

let open: Server | undefined;
afterEach(async () => {
  await new Promise<void>((ok) => (open ? open.close(() => ok()) : ok()));
  open = undefined;
});

/** Answers the first `failures` requests 503 with `text`, then 200 "ok". */
async function standIn(failures: number, text = PROXY_503): Promise<StandIn> {
  const seen: StandIn["seen"] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    seen.push({ method: req.method ?? "", body: Buffer.concat(chunks).toString() });
    if (seen.length <= failures) {
      res.writeHead(503, { "content-type": "text/plain" }).end(text);
      return;
    }
    res.writeHead(200, { "content-type": "text/plain" }).end("ok");
  });
  open = server;
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", () => ok()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/agentsessions.v1.Sessions/GetSession`, seen, server };
}

function counting(): { fetch: typeof fetch; notes: string[] } {
  const notes: string[] = [];
  return { fetch: resendingFetch(unwrappedFetch(), (what) => notes.push(what)), notes };
}

describe("the node tests' fetch past wrangler dev's proxy 503", () => {
  it("sends a POST again after the proxy's 503, with the same body, and notes it", async () => {
    const s = await standIn(1);
    const f = counting();
    const res = await f.fetch(s.url, { method: "POST", body: new Uint8Array([1, 2, 3]) });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
    expect(s.seen).toEqual([
      { method: "POST", body: "\u0001\u0002\u0003" },
      { method: "POST", body: "\u0001\u0002\u0003" },
    ]);
    expect(f.notes).toEqual([`POST ${s.url}`]);
  });

  it("stops after three attempts and hands on the proxy's own answer", async () => {
    const s = await standIn(10);
    const f = counting();
    const res = await f.fetch(s.url, { method: "POST", body: "x" });
    expect(res.status).toBe(503);
    expect(await res.text()).toBe(PROXY_503);
    expect(s.seen).toHaveLength(3);
    expect(f.notes).toHaveLength(2);
  });

  it("never sends again a 503 in other words (the host's own UNAVAILABLE), and keeps its body", async () => {
    const host503 = JSON.stringify({ code: "unavailable", message: "the harness is not connected" });
    const s = await standIn(1, host503);
    const f = counting();
    const res = await f.fetch(s.url, { method: "POST", body: "x" });
    expect(res.status).toBe(503);
    expect(res.headers.get("content-type")).toBe("text/plain");
    expect(await res.text()).toBe(host503);
    expect(s.seen).toHaveLength(1);
    expect(f.notes).toEqual([]);
  });

  it("never sends again a request to a server it does not apply to (one a test may crash on purpose)", async () => {
    const s = await standIn(1);
    const notes: string[] = [];
    const f = resendingFetch(
      unwrappedFetch(),
      (what) => notes.push(what),
      (url) => url.startsWith("http://127.0.0.1:1/"),
    );
    const res = await f(s.url, { method: "POST", body: "x" });
    expect(res.status).toBe(503);
    expect(await res.text()).toBe(PROXY_503);
    expect(s.seen).toHaveLength(1);
    expect(notes).toEqual([]);
  });

  it("never sends again a body it cannot send twice (a stream)", async () => {
    const s = await standIn(1);
    const f = counting();
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode("streamed"));
        c.close();
      },
    });
    const res = await f.fetch(s.url, { method: "POST", body, duplex: "half" } as RequestInit);
    expect(res.status).toBe(503);
    expect(s.seen).toEqual([{ method: "POST", body: "streamed" }]);
    expect(f.notes).toEqual([]);
  });
});
