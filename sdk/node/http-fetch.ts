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
import { STREAM_CALL, type StreamBody, type StreamCall } from "../server-stream.js";

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
  return send(url, agent, init.method ?? "GET", headerRecord(init.headers), init.body, init.signal ?? undefined, webFeed).then((a) => {
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
  const a = await send(url, agent, "POST", lowerCased(init.headers), init.body, init.signal, queueFeed);
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

/** A body read to its end, as one array. */
export async function bytesOf(body: StreamBody): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  const reader = body.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
  return Buffer.concat(parts);
}

/** An answer's status line, headers and body, before anything is made of them. */
interface Answer<B> {
  status: number;
  statusText: string | undefined;
  rawHeaders: string[];
  body: B | null;
  /** Drops the connection: the answer is not wanted after all. */
  discard(): void;
}

/**
 * What an answer's body becomes, fed from the socket: `push` says false when its reader is behind
 * (the socket then stops being read until `resume`); after `end` or `fail` nothing more is fed.
 */
interface Feed<B> {
  body: B;
  push(chunk: Uint8Array): boolean;
  end(): void;
  fail(reason: unknown): void;
}
interface FeedHooks {
  /** The reader wants more: read the socket again. */
  resume(): void;
  /** The reader gave up: close the connection. */
  cancel(): void;
}
type FeedOf<B> = (hooks: FeedHooks) => Feed<B>;

/** A web stream, for `nodeFetch`'s `Response`. */
const webFeed: FeedOf<ReadableStream<Uint8Array>> = (hooks) => {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>(
    {
      start(c) {
        ctl = c;
      },
      pull: () => hooks.resume(),
      cancel: () => hooks.cancel(),
    },
    BODY_BUFFER,
  );
  return {
    body,
    push(chunk) {
      ctl.enqueue(chunk);
      return (ctl.desiredSize ?? 1) > 0;
    },
    end: () => ctl.close(),
    fail: (reason) => ctl.error(reason),
  };
};

/**
 * The SDK's own streams read a plain queue of the socket's chunks: a web stream's machinery (its
 * controller, queue and transferable setup) cost more of the client's CPU than reading a turn's
 * frames did. It reads as a stream's reader does: chunks in order, then done; a failure (abort,
 * connection lost) drops what is queued and fails the next read; `cancel` closes the connection.
 */
class ChunkQueue implements StreamBody, Feed<ChunkQueue> {
  private readonly _chunks: Uint8Array[] = [];
  private _bytes = 0;
  private _paused = false;
  private _ended = false;
  private _error: { reason: unknown } | undefined;
  /** Reads waiting for a chunk, oldest first (a stream's reader may ask again before an answer). */
  private readonly _waiting: { ok(r: ReadableStreamReadResult<Uint8Array>): void; fail(reason: unknown): void }[] = [];

  constructor(private readonly _hooks: FeedHooks) {}

  /** The queue is its own body and its own reader. */
  get body(): ChunkQueue {
    return this;
  }

  getReader(): ChunkQueue {
    return this;
  }

  push(chunk: Uint8Array): boolean {
    const w = this._waiting.shift();
    if (w) {
      w.ok({ done: false, value: chunk });
      return true;
    }
    this._chunks.push(chunk);
    this._bytes += chunk.length;
    this._paused = this._bytes >= BODY_BUFFER.highWaterMark;
    return !this._paused;
  }

  end(): void {
    this._ended = true;
    for (const w of this._waiting.splice(0)) w.ok(DONE);
  }

  fail(reason: unknown): void {
    this._error = { reason };
    this._chunks.length = 0;
    for (const w of this._waiting.splice(0)) w.fail(reason);
  }

  read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    if (this._error) return Promise.reject(this._error.reason);
    const value = this._chunks.shift();
    if (value) {
      this._bytes -= value.length;
      if (this._paused && this._bytes < BODY_BUFFER.highWaterMark) {
        this._paused = false;
        this._hooks.resume();
      }
      return Promise.resolve({ done: false, value });
    }
    if (this._ended) return Promise.resolve(DONE);
    return new Promise((ok, fail) => {
      this._waiting.push({ ok, fail });
    });
  }

  cancel(): Promise<void> {
    if (!this._ended && !this._error) this._hooks.cancel();
    this._ended = true;
    this._chunks.length = 0;
    for (const w of this._waiting.splice(0)) w.ok(DONE);
    return Promise.resolve();
  }
}

const DONE = { done: true, value: undefined } as ReadableStreamReadResult<Uint8Array>;

const queueFeed: FeedOf<ChunkQueue> = (hooks) => new ChunkQueue(hooks);

function send<B>(
  url: URL,
  agent: http.Agent,
  verb: string,
  headers: Record<string, string>,
  body: Body,
  signal: AbortSignal | undefined,
  feedOf: FeedOf<B>,
): Promise<Answer<B>> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  const method = verb.toUpperCase();
  // As fetch does: a length even for an empty body, except on the methods that take none.
  if (bytes || (method !== "GET" && method !== "HEAD")) headers["content-length"] = String(bytes?.length ?? 0);
  const request = (url.protocol === "https:" ? https : http).request;

  return new Promise<Answer<B>>((ok, fail) => {
    const req = request(url, { method, headers, agent });
    let settled = false;
    // The body being fed; undefined once it ended, failed or was canceled (bytes still in flight
    // after that are dropped).
    let feed: Feed<B> | undefined;
    const failBody = (reason: unknown) => {
      const f = feed;
      feed = undefined;
      f?.fail(reason);
    };
    const onAbort = () => {
      const reason = signal!.reason;
      req.destroy();
      if (!settled) {
        settled = true;
        fail(reason);
      } else failBody(reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => signal?.removeEventListener("abort", onAbort);
    req.on("error", (e) => {
      done();
      if (settled) return failBody(new TypeError("fetch failed", { cause: e }));
      settled = true;
      fail(new TypeError("fetch failed", { cause: e }));
    });
    req.on("response", (res) => {
      settled = true;
      const status = res.statusCode ?? 0;
      const respond = (body: B | null) =>
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
      const made = feedOf({
        resume: () => res.resume(),
        cancel: () => {
          feed = undefined;
          done();
          req.destroy();
        },
      });
      feed = made;
      res.on("data", (chunk: Buffer) => {
        if (feed && !feed.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length))) res.pause();
      });
      res.on("end", () => {
        done();
        const ended = feed;
        feed = undefined;
        ended?.end();
      });
      // A connection lost mid-body: the reader's next read fails, as with fetch.
      res.on("close", () => {
        if (!res.complete) failBody(new TypeError("terminated", { cause: new Error("the connection closed before the body ended") }));
      });
      respond(made.body);
    });
    req.end(bytes ?? undefined);
  });
}
