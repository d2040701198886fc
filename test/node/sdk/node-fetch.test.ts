/**
 * nodeFetch (sdk/node/http-fetch.ts) against a real HTTP server in this process: what reaches the
 * server, what comes back, streamed bodies, kept-alive connections, aborts and transport failures.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { freePort } from "../../../scripts/dev-server.js";
import { nodeFetch } from "../../../sdk/node/index.js";
import { STREAM_CALL, type StreamCall } from "../../../sdk/server-stream.js";

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;

let server: Server;
let base = "";
let handler: Handler = (_q, _b, res) => res.end();
const connections = new Set<Socket>();
let opened = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handler(req, Buffer.concat(chunks), res));
  });
  server.on("connection", (s) => {
    opened++;
    connections.add(s);
    s.on("close", () => connections.delete(s));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of connections) s.destroy();
  await new Promise<void>((ok) => server.close(() => ok()));
});

const manual = (init: RequestInit = {}): RequestInit => ({ ...init, redirect: "manual" });

describe("nodeFetch", () => {
  it("request and response: method, headers and body reach the server; status, headers and body come back", async () => {
    let seen: { method?: string; type?: string; length?: string; body?: string } = {};
    handler = (req, body, res) => {
      seen = { method: req.method, type: req.headers["content-type"], length: req.headers["content-length"], body: body.toString() };
      res.setHeader("x-two", ["a", "b"]);
      res.writeHead(418, { "content-type": "text/plain" });
      res.end("short and stout");
    };
    const viaGlobal = vi.spyOn(globalThis, "fetch");
    const r = await nodeFetch(
      `${base}/tea`,
      manual({ method: "POST", headers: { "content-type": "application/x-test" }, body: new TextEncoder().encode("hello") }),
    );
    expect(seen).toEqual({ method: "POST", type: "application/x-test", length: "5", body: "hello" });
    expect(r.status).toBe(418);
    expect(r.headers.get("content-type")).toBe("text/plain");
    expect(r.headers.get("x-two")).toBe("a, b");
    expect(await r.text()).toBe("short and stout");

    const s = await nodeFetch(`${base}/s`, manual({ method: "PUT", body: "text body" }));
    await s.arrayBuffer();
    expect(seen).toMatchObject({ method: "PUT", length: "9", body: "text body" });
    const e = await nodeFetch(`${base}/e`, manual({ method: "POST" }));
    await e.arrayBuffer();
    expect(seen).toMatchObject({ method: "POST", length: "0", body: "" });
    expect(viaGlobal).not.toHaveBeenCalled();
    viaGlobal.mockRestore();
  });

  it("streaming: each chunk is readable before the server ends the body", async () => {
    let finish: () => void = () => {};
    handler = (_q, _b, res) => {
      res.writeHead(200);
      res.write("first");
      finish = () => res.end("last");
    };
    const r = await nodeFetch(`${base}/stream`, manual());
    const reader = r.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("first");
    finish();
    let rest = "";
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += new TextDecoder().decode(c.value);
    expect(rest).toBe("last");
  });

  it("backpressure: a reader that stops reading stops the socket being read", async () => {
    let written = 0;
    let stop = false;
    handler = (_q, _b, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 7);
      const more = () => {
        while (!stop && written < 256 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
    };
    const r = await nodeFetch(`${base}/big`, manual());
    const reader = r.body!.getReader();
    await reader.read();
    await new Promise((ok) => setTimeout(ok, 300));
    // What the socket buffers hold, not the 256 MiB a reader that never pauses would take in.
    expect(written).toBeLessThan(32 * 1024 * 1024);
    stop = true;
    await reader.cancel();
  });

  it("keep-alive: sequential requests share one connection", async () => {
    handler = (_q, _b, res) => res.end("ok");
    await (await nodeFetch(`${base}/warm`, manual())).text();
    const before = opened;
    for (let i = 0; i < 5; i++) expect(await (await nodeFetch(`${base}/k${i}`, manual({ method: "POST", body: "x" }))).text()).toBe("ok");
    expect(opened).toBe(before);
  });

  it("no body: a 204 has a null body, and redirects are left to the caller", async () => {
    handler = (req, _b, res) => {
      if (req.url === "/moved") {
        res.writeHead(302, { location: "/elsewhere" });
        return res.end("see elsewhere");
      }
      res.writeHead(req.url === "/none" ? 204 : 200);
      res.end(req.url === "/none" ? undefined : "arrived");
    };
    const none = await nodeFetch(`${base}/none`, manual());
    expect(none.status).toBe(204);
    expect(none.body).toBeNull();
    const moved = await nodeFetch(`${base}/moved`, manual());
    expect(moved.status).toBe(302);
    expect(moved.headers.get("location")).toBe("/elsewhere");
    await moved.arrayBuffer();
    // Any other redirect mode is Node's fetch's to handle: it follows this one.
    const followed = await nodeFetch(`${base}/moved`);
    expect(await followed.text()).toBe("arrived");
  });

  it("abort: before sending rejects with the signal's reason; during the body fails the next read and closes the connection", async () => {
    const early = new AbortController();
    early.abort(new Error("never mind"));
    await expect(nodeFetch(`${base}/x`, manual({ signal: early.signal }))).rejects.toThrow("never mind");

    let closed: Promise<void> = Promise.resolve();
    handler = (req, _b, res) => {
      closed = new Promise<void>((ok) => req.socket.once("close", () => ok()));
      res.writeHead(200);
      res.write("part");
    };
    const ctl = new AbortController();
    const r = await nodeFetch(`${base}/slow`, manual({ signal: ctl.signal }));
    const reader = r.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("part");
    ctl.abort(new Error("stop now"));
    await expect(reader.read()).rejects.toThrow("stop now");
    await closed;
  });

  it("transport failures: a refused connection is TypeError('fetch failed') with the socket's error as cause; a body cut short fails the read", async () => {
    const port = await freePort();
    const err = await nodeFetch(`http://127.0.0.1:${port}/`, manual()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).message).toBe("fetch failed");
    expect(((err as TypeError).cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");

    handler = (_q, _b, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("only part of it");
      setTimeout(() => res.socket?.destroy(), 10);
    };
    const cut = await nodeFetch(`${base}/cut`, manual());
    await expect(cut.text()).rejects.toThrow();
  });
});

/** The SDK's own stream reads (sdk/server-stream.ts) through nodeFetch's connections, on a chunk queue instead of a web stream. */
describe("nodeFetch's stream call", () => {
  const call = (nodeFetch as unknown as Record<symbol, StreamCall>)[STREAM_CALL]!;
  const post = (path: string, signal?: AbortSignal) =>
    call(`${base}${path}`, { headers: { "Content-Type": "application/x-test" }, body: new Uint8Array([1, 2, 3]), signal });
  const text = (v: Uint8Array | undefined) => new TextDecoder().decode(v);

  it("sends the body and headers, and reads the chunks in order as they arrive, then done (and done again)", async () => {
    let seen: { type?: string; length?: string; body?: number[] } = {};
    let finish: () => void = () => {};
    handler = (req, body, res) => {
      seen = { type: req.headers["content-type"], length: req.headers["content-length"], body: [...body] };
      res.writeHead(200);
      res.write("first");
      finish = () => {
        res.write("second");
        res.end("last");
      };
    };
    const a = await post("/chunks");
    expect(a.status).toBe(200);
    expect(seen).toEqual({ type: "application/x-test", length: "3", body: [1, 2, 3] });
    const reader = a.body!.getReader();
    expect(text((await reader.read()).value)).toBe("first");
    finish();
    let rest = "";
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += text(c.value);
    expect(rest).toBe("secondlast");
    expect((await reader.read()).done).toBe(true);
  });

  it("reads asked for before any chunk arrives are answered in order, and a pending read ends with the body", async () => {
    let send: (s: string) => void = () => {};
    let finish: () => void = () => {};
    handler = (_q, _b, res) => {
      res.writeHead(200);
      res.flushHeaders();
      send = (s) => res.write(s);
      finish = () => res.end();
    };
    const reader = (await post("/later")).body!.getReader();
    const first = reader.read();
    const second = reader.read();
    const third = reader.read();
    send("one");
    expect(text((await first).value)).toBe("one");
    send("two");
    expect(text((await second).value)).toBe("two");
    finish();
    expect((await third).done).toBe(true);
  });

  it("backpressure: a reader that falls behind stops the socket being read, and reading on gets every byte", async () => {
    const total = 64 * 1024 * 1024;
    let written = 0;
    handler = (_q, _b, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 7);
      const more = () => {
        while (written < total) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
    };
    const reader = (await post("/big")).body!.getReader();
    let got = (await reader.read()).value!.length;
    await new Promise((ok) => setTimeout(ok, 300));
    expect(written).toBeLessThan(32 * 1024 * 1024);
    for (let c = await reader.read(); !c.done; c = await reader.read()) got += c.value.length;
    expect(got).toBe(total);
  });

  it("an error answer's text, and a kept-alive connection for the next call", async () => {
    handler = (_q, _b, res) => {
      res.writeHead(404, { "content-type": "application/json" });
      res.end('{"code":"not_found"}');
    };
    await post("/warm");
    const before = opened;
    const a = await post("/missing");
    expect(a.status).toBe(404);
    expect(await a.text()).toBe('{"code":"not_found"}');
    expect(opened).toBe(before);
  });

  it("abort mid-body: queued chunks are dropped, the next read fails with the reason, the connection closes", async () => {
    let closed: Promise<void> = Promise.resolve();
    handler = (req, _b, res) => {
      closed = new Promise<void>((ok) => req.socket.once("close", () => ok()));
      res.writeHead(200);
      res.write("one");
      setTimeout(() => res.write("two"), 20);
    };
    const ctl = new AbortController();
    const reader = (await post("/slow", ctl.signal)).body!.getReader();
    expect(text((await reader.read()).value)).toBe("one");
    await new Promise((ok) => setTimeout(ok, 100));
    ctl.abort(new Error("stop now"));
    await expect(reader.read()).rejects.toThrow("stop now");
    await closed;
    const early = new AbortController();
    early.abort(new Error("never mind"));
    await expect(post("/x", early.signal)).rejects.toThrow("never mind");
  });

  it("a read waiting when the connection is cut fails; cancel closes the connection", async () => {
    handler = (_q, _b, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("only part of it");
      setTimeout(() => res.socket?.destroy(), 30);
    };
    const cut = (await post("/cut")).body!.getReader();
    expect(text((await cut.read()).value)).toBe("only part of it");
    await expect(cut.read()).rejects.toThrow("terminated");

    let closed: Promise<void> = Promise.resolve();
    handler = (req, _b, res) => {
      closed = new Promise<void>((ok) => req.socket.once("close", () => ok()));
      res.writeHead(200);
      res.write("never ends");
    };
    const reader = (await post("/open")).body!.getReader();
    await reader.read();
    await reader.cancel();
    await closed;
    expect((await reader.read()).done).toBe(true);
  });
});
