/**
 * A `fetch` for Node built on node:http with kept-alive connections, for `SessionsClient`'s
 * `fetch` option (`new SessionsClient({ fetch: nodeFetch })`; agentctl uses it).
 *
 * Node's own fetch (undici) spends about three times the CPU of node:http on a small request,
 * measured side by side in docs/performance.md; a client driving many turns at once is bound by it.
 * This covers what the SDK's calls need (http and https URLs, a byte or string body, an abort
 * signal, redirects left to the caller) and hands anything else to the global fetch, so a caller
 * never gets a narrower fetch than Node's. Like fetch, a transport failure rejects with
 * TypeError("fetch failed") whose `cause` is the socket's error, and an abort with the signal's reason.
 *
 * Tested in test/node/sdk/node-fetch.test.ts.
 */
import http from "node:http";
import https from "node:https";
import { STREAM_CALL, type StreamCall } from "../server-stream.js";

/**
 * Idle connections close after 4 s, as undici's do by default: a server closes an idle one in its
 * own time, and a request sent on a connection the server has just closed fails.
 */
const IDLE_MS = 4_000;
const agents = {
  "http:": new http.Agent({ keepAlive: true, timeout: IDLE_MS }),
  "https:": new https.Agent({ keepAlive: true, timeout: IDLE_MS }),
};

/**
 * How far the body's reader may fall behind before the socket stops being read. One chunk (the
 * stream default) would pause and resume the socket for every chunk of a long stream.
 */
const BODY_BUFFER = new ByteLengthQueuingStrategy({ highWaterMark: 1 << 20 });

/** Statuses whose response has no body, whatever the server sends. */
const NULL_BODY = new Set([101, 204, 205, 304]);

type Body = Uint8Array | string | null | undefined;

function plainBody(body: unknown): body is Body {
  return body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
}

export const nodeFetch: typeof globalThis.fetch = (input, init = {}) => {
  const url = typeof input === "string" ? new URL(input) : input instanceof URL ? input : undefined;
  const agent = url && agents[url.protocol as keyof typeof agents];
  // A Request object, a streamed or form body, or a redirect to follow: Node's fetch does those.
  if (!url || !agent || init.redirect !== "manual" || !plainBody(init.body)) return globalThis.fetch(input, init);
  return send(url, agent, init.method ?? "GET", headerRecord(init.headers), init.body, init.signal ?? undefined).then((a) => {
    const headers = new Headers();
    for (let i = 0; i + 1 < a.rawHeaders.length; i += 2) headers.append(a.rawHeaders[i]!, a.rawHeaders[i + 1]!);
    try {
      return new Response(a.body, { status: a.status, statusText: a.statusText, headers });
    } catch (e) {
      // A status a Response cannot carry (outside 200..599).
      a.discard();
      throw new TypeError("fetch failed", { cause: e });
    }
  });
};

/**
 * The SDK's own stream reads (sdk/server-stream.ts) through the same connections, answered
 * without a `Headers` or `Response`: making either loads Node's fetch implementation (about 30 ms),
 * which `agentctl verify` then never needs.
 */
const streamCall: StreamCall = async (input, init) => {
  const url = new URL(input);
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent) throw new TypeError(`fetch failed: ${url.protocol} is not http or https`);
  const a = await send(url, agent, "POST", lowerCased(init.headers), init.body, init.signal);
  return {
    status: a.status,
    body: a.body,
    text: async () => (a.body ? new TextDecoder().decode(await bytesOf(a.body)) : ""),
  };
};
Object.defineProperty(nodeFetch, STREAM_CALL, { value: streamCall });

/** A request's headers as node:http takes them, read without making a `Headers` (see streamCall). */
function headerRecord(h: HeadersInit | undefined): Record<string, string> {
  if (h === undefined) return {};
  if (Array.isArray(h)) {
    // Repeated names joined as Headers joins them.
    const out: Record<string, string> = {};
    for (const [k, v] of h as [string, string][]) {
      const name = k.toLowerCase();
      out[name] = name in out ? `${out[name]}, ${v}` : String(v);
    }
    return out;
  }
  // A Headers object (or anything with its forEach); otherwise a plain record.
  if (typeof (h as Headers).forEach === "function") {
    const out: Record<string, string> = {};
    (h as Headers).forEach((v, k) => {
      out[k] = v;
    });
    return out;
  }
  return lowerCased(h as Record<string, string>);
}

function lowerCased(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = String(v);
  return out;
}

async function bytesOf(body: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  const reader = body.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
  return Buffer.concat(parts);
}

/** An answer's status line, headers and body, before anything is made of them. */
interface Answer {
  status: number;
  statusText: string | undefined;
  rawHeaders: string[];
  body: ReadableStream<Uint8Array> | null;
  /** Drops the connection: the answer is not wanted after all. */
  discard(): void;
}

function send(url: URL, agent: http.Agent, verb: string, headers: Record<string, string>, body: Body, signal: AbortSignal | undefined): Promise<Answer> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  const method = verb.toUpperCase();
  // As fetch does: a length even for an empty body, except on the methods that take none.
  if (bytes || (method !== "GET" && method !== "HEAD")) headers["content-length"] = String(bytes?.length ?? 0);
  const request = (url.protocol === "https:" ? https : http).request;

  return new Promise<Answer>((ok, fail) => {
    const req = request(url, { method, headers, agent });
    let settled = false;
    let abortBody: ((reason: unknown) => void) | undefined;
    const onAbort = () => {
      const reason = signal!.reason;
      req.destroy();
      if (!settled) {
        settled = true;
        fail(reason);
      } else abortBody?.(reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => signal?.removeEventListener("abort", onAbort);
    req.on("error", (e) => {
      done();
      if (settled) return abortBody?.(new TypeError("fetch failed", { cause: e }));
      settled = true;
      fail(new TypeError("fetch failed", { cause: e }));
    });
    req.on("response", (res) => {
      settled = true;
      const status = res.statusCode ?? 0;
      const respond = (body: ReadableStream<Uint8Array> | null) =>
        ok({
          status,
          statusText: res.statusMessage,
          rawHeaders: res.rawHeaders,
          body,
          discard: () => {
            done();
            req.destroy();
          },
        });
      if (method === "HEAD" || NULL_BODY.has(status)) {
        res.resume();
        res.on("end", done);
        return respond(null);
      }
      const stream = new ReadableStream<Uint8Array>(
        {
          start(ctl) {
            abortBody = (reason) => {
              abortBody = undefined;
              ctl.error(reason);
            };
            res.on("data", (chunk: Buffer) => {
              // Bytes still in flight after an abort or a cancel: the stream is already closed to them.
              if (!abortBody) return;
              ctl.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
              // The reader is behind: stop reading the socket until it asks for more.
              if ((ctl.desiredSize ?? 1) <= 0) res.pause();
            });
            res.on("end", () => {
              done();
              if (!abortBody) return;
              abortBody = undefined;
              ctl.close();
            });
            // A connection lost mid-body: the reader's next read fails, as with fetch.
            res.on("close", () => {
              if (!res.complete) abortBody?.(new TypeError("terminated", { cause: new Error("the connection closed before the body ended") }));
            });
          },
          pull() {
            res.resume();
          },
          cancel() {
            done();
            abortBody = undefined;
            req.destroy();
          },
        },
        BODY_BUFFER,
      );
      respond(stream);
    });
    req.end(bytes ?? undefined);
  });
}
