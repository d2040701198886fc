/**
 * A real HTTP stand-in for an OpenAI-compatible chat-completions provider, for tests.
 *
 * It counts requests and answers differently every time (`answer #<n>: <last user text>`), so a
 * replay that returns the recorded answer provably did not ask again. It can stream (SSE, a few
 * chunks), fail with a status, hold a request open until released (to kill a server mid-call), and
 * answer a test-only `GET /hold/<name>` that a test harness waits on.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

export interface FakeRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: {
    model?: string;
    stream?: boolean;
    messages?: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
    tools?: unknown[];
    [k: string]: unknown;
  };
}

export type Reply =
  | { kind: "answer"; text?: string; toolCalls?: { id: string; name: string; arguments: string }[]; usage?: boolean }
  | { kind: "error"; status: number; body?: unknown }
  | { kind: "hold" }
  /** A streamed answer of `chunks` pieces, one every `chunkMs` (a slow model). */
  | { kind: "slow"; chunkMs: number; chunks?: number };

export interface FakeOpenAi {
  url: string;
  /** Completion requests received, in order. */
  requests: FakeRequest[];
  /** Decides each reply; default: a streamed or whole answer, as the request asked. */
  next: (req: FakeRequest, n: number) => Reply;
  /** Resolves when `count` completion requests have arrived. */
  waitForRequests(count: number): Promise<void>;
  /** Ends every held completion request (the client sees the connection close). */
  releaseHeld(): void;
  /** `GET /hold/<name>` waits until `openGate(name)`; gates start closed. */
  openGate(name: string): void;
  gateRequests(name: string): number;
  close(): Promise<void>;
}

export async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const requests: FakeRequest[] = [];
  const held: ServerResponse[] = [];
  const gates = new Map<string, { open: boolean; waiting: ServerResponse[]; count: number }>();
  const waiters: { count: number; resolve: () => void }[] = [];
  const gate = (name: string) => {
    let g = gates.get(name);
    if (!g) gates.set(name, (g = { open: false, waiting: [], count: 0 }));
    return g;
  };

  const fake: FakeOpenAi = {
    url: "",
    requests,
    next: () => ({ kind: "answer" }),
    waitForRequests: (count) =>
      new Promise((resolve) => {
        if (requests.length >= count) resolve();
        else waiters.push({ count, resolve });
      }),
    releaseHeld() {
      for (const r of held.splice(0)) r.destroy();
    },
    openGate(name) {
      const g = gate(name);
      g.open = true;
      for (const r of g.waiting.splice(0)) r.end("open");
    },
    gateRequests: (name) => gate(name).count,
    close: () =>
      new Promise((resolve) => {
        fake.releaseHeld();
        for (const g of gates.values()) for (const r of g.waiting) r.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (req.method === "GET" && url.pathname.startsWith("/hold/")) {
      const g = gate(url.pathname.slice("/hold/".length));
      g.count++;
      if (g.open) res.end("open");
      else g.waiting.push(res);
      return;
    }
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (raw += c));
    req.on("end", () => {
      let body: FakeRequest["body"] = {};
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400).end('{"error":{"message":"bad json"}}');
        return;
      }
      const fr: FakeRequest = { path: url.pathname, headers: req.headers, body };
      requests.push(fr);
      const n = requests.length;
      for (const w of waiters.filter((w) => n >= w.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      reply(res, fr, fake.next(fr, n), n, held);
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const addr = server.address();
  fake.url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  return fake;
}

function reply(res: ServerResponse, req: FakeRequest, r: Reply, n: number, held: ServerResponse[]): void {
  if (r.kind === "hold") {
    held.push(res);
    return;
  }
  if (r.kind === "slow") {
    const pieces = r.chunks ?? 10;
    res.writeHead(200, { "content-type": "text/event-stream" });
    let i = 0;
    const next = () => {
      if (res.destroyed) return;
      if (i < pieces) {
        res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: `w${n}.${i} ` } }] })}\n\n`);
        i++;
        setTimeout(next, r.chunkMs);
        return;
      }
      res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 7, completion_tokens: pieces } })}\n\n`);
      res.end("data: [DONE]\n\n");
    };
    next();
    return;
  }
  if (r.kind === "error") {
    res.writeHead(r.status, { "content-type": "application/json" }).end(JSON.stringify(r.body ?? { error: { message: "stand-in failure" } }));
    return;
  }
  const last = [...(req.body.messages ?? [])].reverse().find((m) => m.role === "user");
  const text = r.text ?? `answer #${n}: ${last?.content ?? ""}`;
  const toolCalls = (r.toolCalls ?? []).map((t) => ({ id: t.id, type: "function", function: { name: t.name, arguments: t.arguments } }));
  const usage = { prompt_tokens: 7, completion_tokens: 3 };
  if (!req.body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ choices: [{ message: { role: "assistant", content: text, tool_calls: toolCalls.length ? toolCalls : undefined } }], usage }));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  const chunks = text.length > 3 ? [text.slice(0, 3), text.slice(3, 8), text.slice(8)].filter(Boolean) : [text];
  for (const c of chunks) res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: c } }] })}\n\n`);
  toolCalls.forEach((t, index) => res.write(`data: ${JSON.stringify({ choices: [{ delta: { tool_calls: [{ index, ...t }] } }] })}\n\n`));
  res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\n`);
  res.end("data: [DONE]\n\n");
}
