/**
 * A real MCP server for tests, built with the official SDK (McpServer over Streamable HTTP,
 * stateless: a server and transport per HTTP request), standing in for the MCP servers a team
 * already runs (objects/tools/mcp-executor.ts).
 *
 * It does what the executor contract asks of any executor (docs/tools.md): it deduplicates
 * durably by the idempotency key it receives in `_meta`, so a key runs its effect once however
 * often it is asked, and it counts effects per key. `next` can make a call fail at the tool level,
 * or perform the effect and then hold the answer (so a test can kill the host in between).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

export const IDEMPOTENCY_META = "agentsessions/idempotency-key";

export interface McpCall {
  tool: string;
  args: Record<string, unknown>;
  /** The request's `_meta`, as the server received it. */
  meta: Record<string, unknown>;
  key: string;
  authorization: string | undefined;
}

export type McpReply = { kind: "ok" } | { kind: "tool-error"; text: string } | { kind: "effect-then-hold" };

export interface FakeMcp {
  url: string;
  calls: McpCall[];
  /** tools/list requests served. */
  listCalls: number;
  /** Effects performed, per idempotency key: never more than 1 for a correct host + server. */
  effects: Map<string, number>;
  next: (call: McpCall) => McpReply;
  waitForCalls(n: number): Promise<void>;
  /** Lets held answers go (their connections are gone by then, if the host was killed). */
  releaseHeld(): void;
  close(): Promise<void>;
}

export async function startFakeMcp(): Promise<FakeMcp> {
  const calls: McpCall[] = [];
  const effects = new Map<string, number>();
  const answers = new Map<string, CallToolResult>();
  const held: (() => void)[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const sockets = new Set<import("node:net").Socket>();

  const fake: FakeMcp = {
    url: "",
    calls,
    listCalls: 0,
    effects,
    next: () => ({ kind: "ok" }),
    waitForCalls: (n) => new Promise((resolve) => (calls.length >= n ? resolve() : waiters.push({ n, resolve }))),
    releaseHeld: () => {
      for (const release of held.splice(0)) release();
    },
    close: () =>
      new Promise((resolve) => {
        fake.releaseHeld();
        for (const s of sockets) s.destroy();
        http.close(() => resolve());
      }),
  };

  /** One effect per key: a key seen before answers what it answered, without a second effect. */
  async function run(
    tool: string,
    args: Record<string, unknown>,
    extra: { _meta?: Record<string, unknown>; requestInfo?: { headers: Record<string, unknown> } },
  ) {
    const meta = extra._meta ?? {};
    const key = String(meta[IDEMPOTENCY_META] ?? "");
    const auth = extra.requestInfo?.headers.authorization;
    const call: McpCall = { tool, args, meta, key, authorization: typeof auth === "string" ? auth : undefined };
    calls.push(call);
    for (const w of waiters.filter((w) => calls.length >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
    const done = answers.get(key);
    if (key && done) return done;
    const reply = fake.next(call);
    effects.set(key, (effects.get(key) ?? 0) + 1);
    const answer: CallToolResult =
      reply.kind === "tool-error"
        ? { isError: true, content: [{ type: "text", text: reply.text }] }
        : { content: [{ type: "text", text: `${tool} done` }], structuredContent: { done: tool, args } };
    if (key) answers.set(key, answer);
    if (reply.kind === "effect-then-hold") await new Promise<void>((release) => held.push(release));
    return answer;
  }

  function mcpServer(): McpServer {
    const server = new McpServer({ name: "fake-mcp", version: "1.0.0" });
    server.registerTool(
      "charge",
      { description: "Charges a card", inputSchema: { cents: z.number().int() }, outputSchema: { done: z.string(), args: z.record(z.string(), z.unknown()) } },
      (args, extra) => run("charge", args, extra),
    );
    server.registerTool("lookup", { description: "Population of a city", inputSchema: { city: z.string() } }, (args, extra) => run("lookup", args, extra));
    return server;
  }

  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? "/", "http://x").pathname !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (raw += c));
    req.on("end", async () => {
      const body = raw ? (JSON.parse(raw) as { method?: string }) : undefined;
      if (body?.method === "tools/list") fake.listCalls++;
      // Stateless: every request gets its own server and transport, closed with the response.
      const server = mcpServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on("close", () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
      } catch {
        if (!res.headersSent) res.writeHead(500).end();
      }
    });
  });
  http.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((ok) => http.listen(0, "127.0.0.1", ok));
  const a = http.address();
  fake.url = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/mcp`;
  return fake;
}
