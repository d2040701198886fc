/**
 * An OpenAI-compatible chat-completions provider over `fetch` (no vendor SDK).
 *
 * Maps contract Messages to chat messages (text, assistant tool calls, tool results) and back.
 * Streams by default: SSE chunks are relayed as deltas while one complete message is returned (and
 * journaled by the caller as one OUTPUT). The API key travels only in the configured auth header;
 * it is never logged, journaled or echoed in an error. Tested against a stand-in HTTP server in
 * test/node/models/openai-chat.test.ts.
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  MessageSchema,
  ToolChoice_Mode,
  UsageSchema,
  type Message,
  type Part,
  type ToolChoice,
  type ToolDefinition,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import { textOf } from "../../proto/messages.js";
import type { ModelRequest, ModelResponse } from "../../runtimes/harness-spi.js";
import { ModelProviderError } from "../controller/errors.js";
import type { InvokeOptions, ModelProvider } from "../controller/models.js";
import { classifyHttpFailure, providerError } from "./openai-error.js";
import { readSse } from "./sse.js";

export interface OpenAiChatConfig {
  baseUrl: string;
  /** Appended to baseUrl; default "/chat/completions". */
  path?: string;
  apiKey?: string;
  /** "Authorization" (default) sends `Bearer <key>`; any other header carries the raw key. */
  authHeader?: string;
  /** Ask for SSE streaming (default true). */
  stream?: boolean;
  fetch?: typeof fetch;
}

type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

interface ChatCompletion {
  choices?: { message?: { content?: string | null; tool_calls?: ChatToolCall[]; reasoning_content?: string } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; completion_tokens_details?: { reasoning_tokens?: number } };
}

export function createOpenAiChatProvider(cfg: OpenAiChatConfig): ModelProvider {
  const url = cfg.baseUrl.replace(/\/+$/, "") + (cfg.path ?? "/chat/completions");
  const doFetch = cfg.fetch ?? fetch;
  const stream = cfg.stream ?? true;
  return {
    async complete(req: ModelRequest, opts: InvokeOptions): Promise<ModelResponse> {
      const headers: Record<string, string> = { "content-type": "application/json", accept: stream ? "text/event-stream" : "application/json" };
      if (cfg.apiKey) {
        const h = cfg.authHeader || "Authorization";
        headers[h] = h.toLowerCase() === "authorization" ? `Bearer ${cfg.apiKey}` : cfg.apiKey;
      }
      // Built outside the try: a bad request must not be reported as an unreachable provider.
      const body = JSON.stringify(requestBody(req, stream));
      let res: Response;
      try {
        res = await doFetch(url, { method: "POST", headers, body, signal: opts.signal });
      } catch (e) {
        if (opts.signal.aborted) throw opts.signal.reason;
        throw providerError({ retryable: true, message: `model provider at ${new URL(url).host} is unreachable` }, e);
      }
      if (!res.ok) {
        const failure = classifyHttpFailure(res.status, await res.text().catch(() => ""), res.headers.get("retry-after"));
        // Some compatible servers echo the presented key in their error message.
        if (cfg.apiKey) failure.message = failure.message.split(cfg.apiKey).join("[redacted]");
        throw providerError(failure);
      }
      const sse = (res.headers.get("content-type") ?? "").includes("text/event-stream");
      const completion = sse ? await readStreamed(res, opts) : ((await res.json()) as ChatCompletion);
      return responseOf(completion, req.model);
    },
  };
}

function requestBody(req: ModelRequest, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(req.params ?? {})) body[k] = paramValue(v);
  body.model = req.model;
  body.messages = req.messages.flatMap(chatMessages);
  if (req.tools?.length) body.tools = req.tools.map(chatTool);
  const choice = req.toolChoice && chatToolChoice(req.toolChoice);
  if (choice !== undefined) body.tool_choice = choice;
  body.stream = stream;
  if (stream) body.stream_options = { include_usage: true };
  return body;
}

/** Provider params travel as strings in the contract; numbers and booleans are sent as JSON values. */
function paramValue(v: string): unknown {
  // JSON's number grammar exactly (no leading zeros), so JSON.parse cannot throw: "007" stays a string.
  if (/^(true|false|null|-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?)$/.test(v)) return JSON.parse(v);
  return v;
}

function chatMessages(m: Message): ChatMessage[] {
  if (m.role === "tool") {
    return m.parts.flatMap((p) =>
      p.part.case === "toolResult" ? [{ role: "tool" as const, tool_call_id: p.part.value.id, content: toolResultText(p.part.value) }] : [],
    );
  }
  if (m.role === "assistant") {
    const calls = m.parts.flatMap((p) =>
      p.part.case === "toolCall"
        ? [
            {
              id: p.part.value.id,
              type: "function" as const,
              function: { name: p.part.value.tool, arguments: JSON.stringify(p.part.value.args ?? {}) },
            },
          ]
        : [],
    );
    const text = textOf(m);
    return [calls.length ? { role: "assistant", content: text || null, tool_calls: calls } : { role: "assistant", content: text }];
  }
  return [{ role: m.role === "system" ? "system" : "user", content: textOf(m) }];
}

function toolResultText(r: Extract<Part["part"], { case: "toolResult" }>["value"]): string {
  const text = r.content.map((p) => (p.part.case === "text" ? p.part.value.text : "")).join("");
  if (text) return text;
  if (r.output) return JSON.stringify(r.output);
  return r.isError ? `error: ${r.error}` : "";
}

function chatTool(t: ToolDefinition) {
  return {
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.inputSchema ?? { type: "object" } },
  };
}

function chatToolChoice(c: ToolChoice): unknown {
  switch (c.mode) {
    case ToolChoice_Mode.AUTO:
      return "auto";
    case ToolChoice_Mode.NONE:
      return "none";
    case ToolChoice_Mode.REQUIRED:
      return c.name ? { type: "function", function: { name: c.name } } : "required";
    default:
      return undefined;
  }
}

/** Reassembles a streamed completion, relaying each text chunk as it arrives. */
async function readStreamed(res: Response, opts: InvokeOptions): Promise<ChatCompletion> {
  let content = "";
  let reasoning = "";
  const calls: ChatToolCall[] = [];
  let usage: ChatCompletion["usage"];
  // A delta never ends in the first half of a UTF-16 pair: a provider may send an emoji's halves
  // in two chunks, and a delta is encoded on its own, where a lone half would become U+FFFD.
  let held = "";
  for await (const data of readSse(res, opts.signal)) {
    if (data === "[DONE]") break;
    let chunk: {
      choices?: {
        delta?: {
          content?: string | null;
          reasoning_content?: string;
          tool_calls?: (Partial<ChatToolCall> & { index?: number; function?: { name?: string; arguments?: string } })[];
        };
      }[];
      usage?: ChatCompletion["usage"];
    };
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new ModelProviderError("model provider sent a stream chunk that is not JSON");
    }
    if (chunk.usage) usage = chunk.usage;
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) continue;
    if (delta.content) {
      content += delta.content;
      let piece = held + delta.content;
      held = "";
      const last = piece.charCodeAt(piece.length - 1);
      if (last >= 0xd800 && last <= 0xdbff) {
        held = piece.slice(-1);
        piece = piece.slice(0, -1);
      }
      if (piece) opts.onDelta?.(piece);
    }
    if (delta.reasoning_content) reasoning += delta.reasoning_content;
    for (const tc of delta.tool_calls ?? []) {
      const i = tc.index ?? calls.length;
      const slot = (calls[i] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      if (tc.id) slot.id = tc.id;
      if (tc.function?.name) slot.function.name += tc.function.name;
      if (tc.function?.arguments) slot.function.arguments += tc.function.arguments;
    }
  }
  // A half left at the end is the answer's too (journaled as U+FFFD, docs/journal.md).
  if (held) opts.onDelta?.(held);
  return {
    choices: [{ message: { content, tool_calls: calls.filter(Boolean), reasoning_content: reasoning || undefined } }],
    usage,
  };
}

function responseOf(c: ChatCompletion, model: string): ModelResponse {
  const msg = c.choices?.[0]?.message;
  if (!msg) throw new ModelProviderError("model provider answered without a choice");
  const parts: Part["part"][] = [];
  if (msg.reasoning_content) {
    parts.push({
      case: "reasoning",
      value: { provider: "openai-compatible", modelId: model, summary: [{ part: { case: "text", value: { text: msg.reasoning_content } } }] } as never,
    });
  }
  if (msg.content) parts.push({ case: "text", value: { text: msg.content } } as never);
  for (const tc of msg.tool_calls ?? []) {
    parts.push({ case: "toolCall", value: { id: tc.id, tool: tc.function.name, args: parseArgs(tc.function.arguments) } } as never);
  }
  const message = create(MessageSchema, { role: "assistant", parts: parts.map((part) => ({ part })) });
  const u = c.usage;
  const usage = u
    ? create(UsageSchema, {
        model,
        inputTokens: BigInt(u.prompt_tokens ?? 0),
        outputTokens: BigInt(u.completion_tokens ?? 0),
        reasoningTokens: BigInt(u.completion_tokens_details?.reasoning_tokens ?? 0),
      })
    : undefined;
  return { message, usage };
}

/** Tool arguments as a JSON object; arguments that are not one are kept verbatim under "_raw". */
function parseArgs(raw: string): JsonObject {
  try {
    const v = JSON.parse(raw || "{}") as unknown;
    if (v && typeof v === "object" && !Array.isArray(v)) return v as JsonObject;
  } catch {
    // fall through
  }
  return { _raw: raw };
}
