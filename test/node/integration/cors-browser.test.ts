/**
 * CORS from a real browser (worker/cors.ts): Debian's Chromium opens a page served from another
 * origin (another loopback port) and calls the Sessions API of a `wrangler dev` whose
 * CORS_ALLOWED_ORIGINS names that origin: a Connect unary call (preflighted: JSON with Connect's
 * headers), a streaming Exec, a gRPC-Web call whose status travels in an exposed header, and a
 * Connect GET. A page on an origin that is not listed is blocked by the browser at the preflight,
 * and nothing reaches the API.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { launchChromium, type Chromium } from "../support/chromium.js";
import { startHost, type Host } from "../support/host.js";

const PROJECT = "cors-demo";
let host: Host;
let browser: Chromium;
let allowed: PageServer;
let foreign: PageServer;

interface PageServer {
  origin: string;
  close(): Promise<void>;
}

/** An origin of its own: a loopback port that serves an empty page. */
async function startPageServer(): Promise<PageServer> {
  const server: Server = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title>"));
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const a = server.address();
  return {
    origin: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

async function pageAt(origin: string): Promise<Page> {
  const page = await browser.context.newPage();
  await page.goto(`${origin}/`);
  return page;
}

beforeAll(async () => {
  [allowed, foreign] = await Promise.all([startPageServer(), startPageServer()]);
  host = await startHost({ vars: { CORS_ALLOWED_ORIGINS: `${allowed.origin}, https://other.example.com` } });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await host?.stop();
  await allowed?.close();
  await foreign?.close();
});

/** In the page: a Connect JSON unary call, with the headers a Connect client sends (so it is preflighted). */
const unaryInPage = (page: Page, api: string, method: string, body: unknown) =>
  page.evaluate(
    async ({ api, method, body }) => {
      const res = await fetch(`${api}/agentsessions.v1.Sessions/${method}`, {
        method: "POST",
        headers: { "content-type": "application/json", "connect-protocol-version": "1", authorization: "Bearer none" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    { api, method, body },
  );

describe("CORS from a page on another origin (Chromium)", () => {
  it("CreateSession from an allowed origin: the preflight passes and the page reads the session", async () => {
    const page = await pageAt(allowed.origin);
    const out = await unaryInPage(page, host.url, "CreateSession", { session: { metadata: { project: PROJECT, name: "from-browser" } } });
    expect(out.status).toBe(200);
    const uid = (out.body.metadata as { uid: string }).uid;
    expect((await host.client.get(uid)).metadata?.name).toBe("from-browser");
    await page.close();
  });

  it("Exec from an allowed origin: the page reads the whole stream, ending in an end-of-stream frame", async () => {
    const page = await pageAt(allowed.origin);
    const frames = await page.evaluate(async (api) => {
      const json = new TextEncoder().encode(JSON.stringify({ inputs: [{ role: "user", parts: [{ text: { text: "hi" } }] }] }));
      const body = new Uint8Array(5 + json.length);
      new DataView(body.buffer).setUint32(1, json.length);
      body.set(json, 5);
      const res = await fetch(`${api}/agentsessions.v1.Sessions/Exec`, {
        method: "POST",
        headers: { "content-type": "application/connect+json", "connect-protocol-version": "1" },
        body,
      });
      const bytes = new Uint8Array(await res.arrayBuffer());
      const out: { flags: number; json: unknown }[] = [];
      for (let at = 0; at + 5 <= bytes.length; ) {
        const n = new DataView(bytes.buffer, at + 1, 4).getUint32(0);
        out.push({ flags: bytes[at]!, json: JSON.parse(new TextDecoder().decode(bytes.subarray(at + 5, at + 5 + n))) });
        at += 5 + n;
      }
      return out;
    }, host.url);
    // The session first, then the echo turn's five records, then the end-of-stream frame (no error).
    expect(frames.length).toBe(7);
    expect(frames.at(-1)).toEqual({ flags: 2, json: {} });
    expect(JSON.stringify(frames[5]!.json)).toContain("EVENT_END");
    await page.close();
  });

  it("gRPC-Web from an allowed origin: the page reads the status, in the trailer frame and in exposed headers", async () => {
    const page = await pageAt(allowed.origin);
    const out = await page.evaluate(async (api) => {
      const call = async (contentType: string, message: Uint8Array) => {
        const body = new Uint8Array(5 + message.length);
        new DataView(body.buffer).setUint32(1, message.length);
        body.set(message, 5);
        const res = await fetch(`${api}/agentsessions.v1.Sessions/GetSession`, {
          method: "POST",
          headers: { "content-type": contentType, "x-grpc-web": "1", "x-user-agent": "cors-test" },
          body,
        });
        const bytes = new Uint8Array(await res.arrayBuffer());
        // A trailer frame (flag 0x80) carries the status when there is a body.
        const trailer = bytes.length > 5 && bytes[0] === 0x80 ? new TextDecoder().decode(bytes.subarray(5)) : "";
        return { header: res.headers.get("grpc-status"), message: res.headers.get("grpc-message"), trailer };
      };
      const unknown = await call("application/grpc-web+json", new TextEncoder().encode(JSON.stringify({ uid: "sess-000000000000000000000000" })));
      // An undecodable binary message is refused trailers-only: the status is in headers.
      const malformed = await call("application/grpc-web+proto", new Uint8Array([0xff, 0xff, 0xff]));
      return { unknown, malformed };
    }, host.url);
    expect(out.unknown.trailer).toMatch(/grpc-status: 5\r\n/);
    expect(out.malformed.header).toBe("3");
    expect(decodeURIComponent(out.malformed.message ?? "")).toMatch(/^the request body is not a valid binary agentsessions.v1.GetSessionRequest/);
    await page.close();
  });

  it("ListSessions by Connect GET from an allowed origin", async () => {
    const page = await pageAt(allowed.origin);
    const out = await page.evaluate(async (api) => {
      const message = encodeURIComponent(JSON.stringify({ project: "cors-demo" }));
      const res = await fetch(`${api}/agentsessions.v1.Sessions/ListSessions?connect=v1&encoding=json&message=${message}`, {
        headers: { "connect-protocol-version": "1" },
      });
      return { status: res.status, names: ((await res.json()) as { sessions: { metadata: { name?: string } }[] }).sessions.map((s) => s.metadata.name) };
    }, host.url);
    expect(out).toEqual({ status: 200, names: expect.arrayContaining(["from-browser"]) });
    await page.close();
  });

  it("CreateSession from an origin that is not listed: the browser blocks it and nothing is created", async () => {
    const count = async () => {
      let n = 0;
      for await (const _ of host.client.list({ project: PROJECT })) n++;
      return n;
    };
    const before = await count();
    const page = await pageAt(foreign.origin);
    const out = await page.evaluate(async (api) => {
      try {
        await fetch(`${api}/agentsessions.v1.Sessions/CreateSession`, {
          method: "POST",
          headers: { "content-type": "application/json", "connect-protocol-version": "1" },
          body: JSON.stringify({ session: { metadata: { project: "cors-demo", name: "blocked" } } }),
        });
        return "reached";
      } catch (e) {
        return (e as Error).name;
      }
    }, host.url);
    expect(out).toBe("TypeError");
    expect(before).toBeGreaterThan(0);
    expect(await count()).toBe(before);
    await page.close();
  });
});
