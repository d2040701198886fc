/**
 * The OpenAI-compatible chat provider (objects/models/openai-chat.ts) against a real HTTP stand-in
 * (test/node/support/fake-openai.ts): request mapping, whole and streamed answers, tool calls,
 * auth headers, and failures that name the status but never the key.
 */
import { createServer } from "node:net";
import { create } from "@bufbuild/protobuf";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MessageSchema, ToolChoiceSchema, ToolChoice_Mode, ToolDefinitionSchema, type Message } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { textMessage, textOf, userText } from "../../../proto/messages.js";
import type { ModelRequest } from "../../../runtimes/harness-spi.js";
import { createOpenAiChatProvider, type OpenAiChatConfig } from "../../../objects/models/openai-chat.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";

const KEY = "sk-test-SECRET-123";

let fake: FakeOpenAi;
beforeEach(async () => {
  fake = await startFakeOpenAi();
});
afterEach(async () => {
  await fake.close();
});

function provider(cfg: Partial<OpenAiChatConfig> = {}) {
  return createOpenAiChatProvider({ baseUrl: fake.url, apiKey: KEY, ...cfg });
}

function opts(onDelta?: (chunk: string) => void) {
  return { signal: new AbortController().signal, onDelta };
}

function request(text = "hi", extra: Partial<ModelRequest> = {}): ModelRequest {
  return { model: "gpt-test", messages: [userText(text)], ...extra };
}

/** The rejection of `p` (fails the test if `p` resolves). */
async function failure(p: Promise<unknown>): Promise<Error> {
  const r = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(r instanceof Error)) throw new Error(`expected a rejection with an Error, got ${String(r)}`);
  return r;
}

function assistantWithCall(text: string): Message {
  return create(MessageSchema, {
    role: "assistant",
    parts: [{ part: { case: "text", value: { text } } }, { part: { case: "toolCall", value: { id: "call_1", tool: "get_weather", args: { city: "Paris" } } } }],
  });
}

describe("createOpenAiChatProvider", () => {
  it("complete: a whole (non-streamed) answer comes back as one assistant text message with usage", async () => {
    const res = await provider({ stream: false }).complete(request("hello there"), opts());
    expect(res.message.role).toBe("assistant");
    expect(res.message.parts.map((p) => p.part.case)).toEqual(["text"]);
    expect(textOf(res.message)).toBe("answer #1: hello there");
    expect(res.usage).toMatchObject({ model: "gpt-test", inputTokens: 7n, outputTokens: 3n });
    const body = fake.requests[0]!.body;
    expect(body.stream).toBe(false);
    expect(body).not.toHaveProperty("stream_options");
    expect(fake.requests[0]!.headers.accept).toBe("application/json");
  });

  it("complete: a streamed answer relays its chunks in order and returns their concatenation", async () => {
    fake.next = () => ({ kind: "answer", text: "Hello, streaming world" });
    const deltas: string[] = [];
    const res = await provider().complete(
      request(),
      opts((c) => deltas.push(c)),
    );
    expect(deltas).toEqual(["Hel", "lo, s", "treaming world"]);
    expect(deltas.join("")).toBe(textOf(res.message));
    expect(textOf(res.message)).toBe("Hello, streaming world");
    expect(res.usage).toMatchObject({ model: "gpt-test", inputTokens: 7n, outputTokens: 3n, reasoningTokens: 0n });
    const r = fake.requests[0]!;
    expect(r.body.stream).toBe(true);
    expect(r.body.stream_options).toEqual({ include_usage: true });
    expect(r.headers.accept).toBe("text/event-stream");
  });

  it("complete: maps system, user, assistant tool calls and tool results to OpenAI chat messages", async () => {
    const messages = [
      textMessage("system", "be brief"),
      userText("weather in Paris?"),
      assistantWithCall("let me check"),
      create(MessageSchema, {
        role: "assistant",
        parts: [{ part: { case: "toolCall", value: { id: "call_2", tool: "noargs" } } }],
      }),
      create(MessageSchema, {
        role: "tool",
        parts: [
          { part: { case: "toolResult", value: { id: "call_1", content: [{ part: { case: "text", value: { text: "sunny" } } }] } } },
          { part: { case: "toolResult", value: { id: "call_2", output: { temp: 21 } } } },
        ],
      }),
      create(MessageSchema, {
        role: "tool",
        parts: [{ part: { case: "toolResult", value: { id: "call_3", isError: true, error: "boom" } } }],
      }),
      textMessage("assistant", "It is sunny."),
      userText("thanks"),
    ];
    await provider({ stream: false }).complete({ model: "gpt-test", messages }, opts());
    const body = fake.requests[0]!.body;
    expect(body.model).toBe("gpt-test");
    expect(body.messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "weather in Paris?" },
      {
        role: "assistant",
        content: "let me check",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
      },
      { role: "assistant", content: null, tool_calls: [{ id: "call_2", type: "function", function: { name: "noargs", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_1", content: "sunny" },
      { role: "tool", tool_call_id: "call_2", content: '{"temp":21}' },
      { role: "tool", tool_call_id: "call_3", content: "error: boom" },
      { role: "assistant", content: "It is sunny." },
      { role: "user", content: "thanks" },
    ]);
  });

  it("complete: sends tools as function tools and a forced tool choice by name", async () => {
    const tools = [
      create(ToolDefinitionSchema, {
        name: "get_weather",
        description: "Weather for a city",
        inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      }),
      create(ToolDefinitionSchema, { name: "now", description: "Current time" }),
    ];
    const toolChoice = create(ToolChoiceSchema, { mode: ToolChoice_Mode.REQUIRED, name: "get_weather" });
    await provider({ stream: false }).complete(request("hi", { tools, toolChoice }), opts());
    const body = fake.requests[0]!.body;
    expect(body.tools).toEqual([
      {
        type: "function",
        function: {
          name: "get_weather",
          description: "Weather for a city",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      },
      { type: "function", function: { name: "now", description: "Current time", parameters: { type: "object" } } },
    ]);
    expect(body.tool_choice).toEqual({ type: "function", function: { name: "get_weather" } });
  });

  it.each([
    [ToolChoice_Mode.AUTO, "auto"],
    [ToolChoice_Mode.NONE, "none"],
    [ToolChoice_Mode.REQUIRED, "required"],
  ] as const)("complete: tool choice mode %s is sent as %j", async (mode, wire) => {
    await provider({ stream: false }).complete(request("hi", { toolChoice: create(ToolChoiceSchema, { mode }) }), opts());
    expect(fake.requests[0]!.body.tool_choice).toBe(wire);
  });

  it("complete: no tools and an unspecified tool choice send neither field", async () => {
    await provider({ stream: false }).complete(
      request("hi", { tools: [], toolChoice: create(ToolChoiceSchema, { mode: ToolChoice_Mode.UNSPECIFIED }) }),
      opts(),
    );
    const body = fake.requests[0]!.body;
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("tool_choice");
  });

  it("complete: params that look numeric, boolean or null are sent as JSON values, others as strings", async () => {
    const params = {
      temperature: "0.2",
      max_tokens: "64",
      frequency_penalty: "-1.5",
      top_p: "1e-1",
      logprobs: "true",
      parallel_tool_calls: "false",
      seed: "null",
      user: "alice",
      reasoning_effort: "low",
      suffix: "007",
      stop: "1.",
    };
    await provider({ stream: false }).complete(request("hi", { params }), opts());
    expect(fake.requests[0]!.body).toMatchObject({
      temperature: 0.2,
      max_tokens: 64,
      frequency_penalty: -1.5,
      top_p: 0.1,
      logprobs: true,
      parallel_tool_calls: false,
      seed: null,
      user: "alice",
      reasoning_effort: "low",
      // Not JSON numbers: kept verbatim rather than failing the call.
      suffix: "007",
      stop: "1.",
    });
  });

  it("complete: params cannot override the model or the stream flag", async () => {
    await provider({ stream: false }).complete(request("hi", { params: { model: "other", stream: "true" } }), opts());
    expect(fake.requests[0]!.body).toMatchObject({ model: "gpt-test", stream: false });
  });

  it("complete: posts to /chat/completions under the base URL by default", async () => {
    await provider({ baseUrl: `${fake.url}/v1/`, stream: false }).complete(request(), opts());
    expect(fake.requests[0]!.path).toBe("/v1/chat/completions");
  });

  it("complete: posts to a configured custom path", async () => {
    await provider({ path: "/openai/deployments/d1/chat/completions", stream: false }).complete(request(), opts());
    expect(fake.requests[0]!.path).toBe("/openai/deployments/d1/chat/completions");
  });

  it("complete: sends the key as Authorization: Bearer by default", async () => {
    await provider({ stream: false }).complete(request(), opts());
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("complete: sends the raw key in a custom auth header and no Authorization", async () => {
    await provider({ authHeader: "api-key", stream: false }).complete(request(), opts());
    const h = fake.requests[0]!.headers;
    expect(h["api-key"]).toBe(KEY);
    expect(h).not.toHaveProperty("authorization");
  });

  it("complete: sends no key header when no key is configured", async () => {
    await provider({ apiKey: undefined, authHeader: "api-key", stream: false }).complete(request(), opts());
    const h = fake.requests[0]!.headers;
    expect(h).not.toHaveProperty("authorization");
    expect(h).not.toHaveProperty("api-key");
    expect(JSON.stringify(h)).not.toContain("Bearer");
  });

  it.each([false, true])("complete: tool calls in the answer become tool_call parts with parsed args (stream=%s)", async (stream) => {
    fake.next = () => ({
      kind: "answer",
      text: "",
      toolCalls: [
        { id: "call_a", name: "get_weather", arguments: '{"city":"Paris","days":2}' },
        { id: "call_b", name: "shell", arguments: "ls -la" },
        { id: "call_c", name: "list", arguments: "[1,2]" },
      ],
    });
    const res = await provider({ stream }).complete(request(), opts());
    expect(res.message.parts.map((p) => p.part)).toMatchObject([
      { case: "toolCall", value: { id: "call_a", tool: "get_weather", args: { city: "Paris", days: 2 } } },
      { case: "toolCall", value: { id: "call_b", tool: "shell", args: { _raw: "ls -la" } } },
      { case: "toolCall", value: { id: "call_c", tool: "list", args: { _raw: "[1,2]" } } },
    ]);
  });

  it("complete: streamed tool-call arguments split across chunks and reasoning are reassembled", async () => {
    const chunks = [
      { choices: [{ delta: { reasoning_content: "think " } }] },
      { choices: [{ delta: { reasoning_content: "hard" } }] },
      { choices: [{ delta: { content: "ok" } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, id: "call_9", type: "function", function: { name: "get_weather", arguments: "" } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'ty":"Oslo"}' } }] } }] },
      { choices: [], usage: { prompt_tokens: 5, completion_tokens: 9, completion_tokens_details: { reasoning_tokens: 4 } } },
    ];
    const sse = chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
    const fetchSse: typeof fetch = async () => new Response(sse, { headers: { "content-type": "text/event-stream" } });
    const res = await createOpenAiChatProvider({ baseUrl: "http://unused.invalid", fetch: fetchSse }).complete(request(), opts());
    expect(res.message.parts.map((p) => p.part)).toMatchObject([
      { case: "reasoning", value: { summary: [{ part: { case: "text", value: { text: "think hard" } } }] } },
      { case: "text", value: { text: "ok" } },
      { case: "toolCall", value: { id: "call_9", tool: "get_weather", args: { city: "Oslo" } } },
    ]);
    expect(res.usage).toMatchObject({ inputTokens: 5n, outputTokens: 9n, reasoningTokens: 4n });
  });

  it("complete: an emoji whose halves come in two chunks is relayed whole, never as a delta ending in half of it", async () => {
    const pieces = ["smile \ud83d", "\ude00 and", " cut \ud83d"];
    const sse = pieces.map((c) => `data: ${JSON.stringify({ choices: [{ delta: { content: c } }] })}\n\n`).join("") + "data: [DONE]\n\n";
    const fetchSse: typeof fetch = async () => new Response(sse, { headers: { "content-type": "text/event-stream" } });
    const deltas: string[] = [];
    const res = await createOpenAiChatProvider({ baseUrl: "http://unused.invalid", fetch: fetchSse }).complete(
      request(),
      opts((c) => deltas.push(c)),
    );
    expect(deltas).toEqual(["smile ", "\ud83d\ude00 and", " cut ", "\ud83d"]);
    expect(deltas.join("")).toBe(textOf(res.message));
    expect(textOf(res.message)).toBe("smile \u{1f600} and cut \ud83d");
  });

  it("complete: HTTP 429 fails with a retryable error naming the status, never the key", async () => {
    fake.next = () => ({ kind: "error", status: 429, body: { error: { message: "Rate limit reached" } } });
    const err = await failure(provider().complete(request(), opts()));
    expect(err.message).toContain("429");
    expect(err.message).toContain("Rate limit reached");
    expect(err.message).toMatch(/retryable/);
    expect(err.message).not.toContain(KEY);
  });

  it("complete: a provider's long error message is shortened without cutting an emoji in two", async () => {
    const message = `${"x".repeat(199)}\u{1f600} and more`;
    fake.next = () => ({ kind: "error", status: 400, body: { error: { message } } });
    const err = await failure(provider().complete(request(), opts()));
    expect(err.message).toContain("x".repeat(199));
    expect(err.message).not.toContain("\u{1f600}");
    expect((err.message as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
  });

  it("complete: HTTP 500 fails with a retryable error naming the status, never the key", async () => {
    fake.next = () => ({ kind: "error", status: 500 });
    const err = await failure(provider().complete(request(), opts()));
    expect(err.message).toContain("500");
    expect(err.message).toMatch(/retryable/);
    expect(err.message).not.toContain(KEY);
  });

  it("complete: HTTP 401 says the credentials were rejected, names the status and never echoes the key", async () => {
    // Some compatible servers echo the presented key in their error message.
    fake.next = () => ({ kind: "error", status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}.` } } });
    const err = await failure(provider().complete(request(), opts()));
    expect(err.message).toContain("401");
    expect(err.message).toMatch(/rejected the credentials/);
    expect(err.message).not.toMatch(/retryable/);
    expect(err.message).not.toContain(KEY);
    expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).not.toContain(KEY);
  });

  it("complete: an unreachable base URL fails with an 'unreachable' error", async () => {
    const port = await closedPort();
    const err = await failure(createOpenAiChatProvider({ baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY }).complete(request(), opts()));
    expect(err.message).toMatch(/unreachable/);
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).not.toContain(KEY);
  });

  it("complete: aborting the signal stops a held request with the abort reason", async () => {
    fake.next = () => ({ kind: "hold" });
    const ac = new AbortController();
    const pending = failure(provider().complete(request(), { signal: ac.signal }));
    await fake.waitForRequests(1);
    const reason = new Error("turn canceled");
    ac.abort(reason);
    expect(await pending).toBe(reason);
  });
});

/** A port that nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, "127.0.0.1", ok));
  const addr = srv.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}
