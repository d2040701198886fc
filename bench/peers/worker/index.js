/**
 * The Durable Object peers of `npm run bench:peers` (bench/peers/run.ts), in one small worker:
 *
 * - `ChatAgent`: the Cloudflare Agents SDK's `AIChatAgent` (@cloudflare/ai-chat), driven over its
 *   WebSocket protocol at /agents/chat-agent/<name>. Its model is `echoModel` below: a language
 *   model that answers `echo:<last user text>` at once, through the AI SDK's `streamText` as a real
 *   model would.
 * - `BareAgent`: a bare Agents-SDK `Agent` that stores each turn's two rows with `this.sql` (no
 *   journal, no mediation): the floor for "a Durable Object with SQLite". POST text to
 *   /agents/bare-agent/<name>; `?seed=N` appends N turns in one request (for long sessions).
 * - `WsEcho` and /floor: the transport floors (a WebSocket message to a Durable Object, and a
 *   request the Worker answers without any Durable Object).
 *
 * Plain JavaScript on purpose: the project's typecheck must pass without the peers installed.
 */
import { AIChatAgent } from "@cloudflare/ai-chat";
import { Agent, routeAgentRequest } from "agents";
import { convertToModelMessages, streamText } from "ai";
import { DurableObject } from "cloudflare:workers";

/** The text of the last user message of a language-model prompt. */
function lastUserText(prompt) {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i];
    if (m.role !== "user") continue;
    return m.content
      .filter((p) => p.type === "text")
      .map((p) => p.text)
      .join("");
  }
  return "";
}

/** A language model (AI SDK spec v3) that streams `echo:<text>` at once: the stub model. */
const echoModel = {
  specificationVersion: "v3",
  provider: "bench",
  modelId: "echo",
  supportedUrls: {},
  async doGenerate() {
    throw new Error("the bench's echo model only streams");
  },
  async doStream(options) {
    const text = "echo:" + lastUserText(options.prompt);
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 1, text: 1, reasoning: 0 },
    };
    const parts = [
      { type: "stream-start", warnings: [] },
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: text },
      { type: "text-end", id: "t" },
      { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
    ];
    return {
      stream: new ReadableStream({
        start(c) {
          for (const p of parts) c.enqueue(p);
          c.close();
        },
      }),
    };
  },
};

export class ChatAgent extends AIChatAgent {
  async onChatMessage() {
    const result = streamText({ model: echoModel, messages: await convertToModelMessages(this.messages) });
    return result.toUIMessageStreamResponse();
  }
}

export class BareAgent extends Agent {
  onStart() {
    this.sql`CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY AUTOINCREMENT, role TEXT NOT NULL, content TEXT NOT NULL, created INTEGER NOT NULL)`;
  }

  async onRequest(request) {
    const seed = Number(new URL(request.url).searchParams.get("seed") ?? 0);
    if (seed > 0) {
      // Long sessions are built in bulk: the same rows the turns would write, in one request.
      this.ctx.storage.transactionSync(() => {
        for (let i = 0; i < seed; i++) {
          const now = Date.now();
          this.sql`INSERT INTO messages (role, content, created) VALUES ('user', ${`seed ${i}`}, ${now})`;
          this.sql`INSERT INTO messages (role, content, created) VALUES ('assistant', ${`echo:seed ${i}`}, ${now})`;
        }
      });
      return new Response("seeded");
    }
    const text = await request.text();
    this.sql`INSERT INTO messages (role, content, created) VALUES ('user', ${text}, ${Date.now()})`;
    const answer = "echo:" + text;
    this.sql`INSERT INTO messages (role, content, created) VALUES ('assistant', ${answer}, ${Date.now()})`;
    // The response leaves only once both rows are durable (the Durable Object's output gate).
    return new Response(answer);
  }
}

/** Answers every WebSocket message with the same bytes: the WebSocket-to-DO floor. */
export class WsEcho extends DurableObject {
  async fetch() {
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  webSocketMessage(ws, message) {
    ws.send(message);
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/floor") return new Response("ok");
    if (url.pathname.startsWith("/ws-echo/")) return env.WS_ECHO.get(env.WS_ECHO.idFromName(url.pathname.slice(9))).fetch(request);
    return (await routeAgentRequest(request, env)) ?? new Response("not found", { status: 404 });
  },
};
