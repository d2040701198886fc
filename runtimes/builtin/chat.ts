/**
 * The built-in `chat` harness (docs/behaviour.md §7.3): a stateless conversational agent with tools.
 *
 * Each turn builds the conversation from history (INPUT and OUTPUT messages in journal order, so
 * inputs of failed turns stay in context, plus the TOOL_RESULT receipts that answer an OUTPUT's
 * tool calls), prepends the optional system prompt, and appends this turn's inputs. Then an agent
 * loop: a mediated model call offering the configured tools; every tool call the model makes goes
 * through the sink at the tool's declared tier (the host records, executes or gates it); results go
 * back to the model; until it answers without tool calls, or `max_steps` model calls were made.
 *
 * The model is the config's `model`, else "" (the host resolves "" to the session's model or its
 * default), so a changed deployment default never changes what a recorded turn asked for.
 * Idempotency keys are `<execution id>/<tool call id>`: stable across replay and recovery.
 *
 * With `mcp_tools`, the tool list also comes from the host's MCP server: the turn first makes a
 * host-executed call of the MCP method `tools/list` (objects/tools/mcp-executor.ts), so the list is
 * journaled as that call's receipt and a replay or recovery offers the model exactly the tools it
 * was offered live, without asking the server again. `tools` entries of the same name override
 * the listed ones (their mediation, e.g. REQUIRES_APPROVAL; their description or schema).
 *
 * With `max_history_tokens`, the history stays bounded (docs/history.md): when the conversation the
 * history says is estimated above that many tokens (`estimateTokens`), the turn first asks the
 * model for a summary of it through `sink.compact`. The host journals the summary as a compaction
 * point, and this turn and every later one start from the summary instead of the whole history.
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  EventKind,
  Mediation,
  MessageSchema,
  ToolCallSchema,
  ToolDefinitionSchema,
  ToolResultSchema,
  type Event,
  type Message,
  type ToolDefinition,
  type ToolResult,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessDescriptorSchema, Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { textMessage, textOf } from "../../proto/messages.js";
import { compactionOf } from "../compaction.js";
import { type EventSink, type Harness, type HarnessStart, sealMessages } from "../harness-spi.js";

export interface ChatTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments, shown to the model. */
  input_schema?: JsonObject;
  /** The same, in MCP's spelling; give one or the other. */
  inputSchema?: JsonObject;
  /** "CONTROLLER_MEDIATED" (default) or "REQUIRES_APPROVAL". */
  mediation?: string;
  /** REQUIRES_APPROVAL: deny automatically after this many seconds without a decision. */
  approval_timeout_seconds?: number;
}

export interface ChatConfig {
  system_prompt?: string;
  model?: string;
  tools?: ChatTool[];
  /** Most model calls in one turn (default 8). */
  max_steps?: number;
  /** Offer the MCP server's tools too (`true`), or only those named; see the header. */
  mcp_tools?: boolean | string[];
  /** Compact the history once its conversation is estimated above this many tokens; see the header. */
  max_history_tokens?: number;
}

/** What the compaction call asks the model for, after the conversation it summarizes. */
export const COMPACTION_PROMPT =
  "Summarize the conversation so far for your own later use: the user's goals, the facts and decisions established, tool results that still matter, and what remains open. Answer with the summary only.";

/** How a compaction point's summary is handed to the model in later turns. */
export const SUMMARY_PREFIX = "Summary of the conversation before this point:\n\n";

/** The recorded call that lists the MCP server's tools at the start of a turn. */
export const MCP_TOOLS_LIST_CALL = { id: "mcp-tools-list", tool: "tools/list" } as const;

export const DEFAULT_MAX_STEPS = 8;

export function createChatHarness(opts: { models?: string[] } = {}): Harness {
  return {
    // It reaches the world only through its sink: the host may group its records' commits.
    sinkOnly: true,
    describe() {
      return create(HarnessDescriptorSchema, {
        id: "chat",
        version: "2",
        models: opts.models ?? [],
        capabilities: { resumability: Resumability.STATELESS_REPLAY, forkSafe: true, reasoningReplay: true },
      });
    },
    async run(start, sink) {
      const config = await withMcpTools(start, sink, parseChatConfig(start.config));
      const messages = (await compacted(start, sink, config)) ?? conversation(start, config);
      const tools = (config.tools ?? []).map(definitionOf);
      const maxSteps = config.max_steps ?? DEFAULT_MAX_STEPS;
      for (let step = 1; ; step++) {
        const res = await sink.model({ model: config.model ?? "", messages, tools });
        const calls = res.message.parts.flatMap((p) => (p.part.case === "toolCall" ? [p.part.value] : []));
        if (calls.length === 0) return;
        if (step >= maxSteps) throw new Error(`the model was still calling tools after ${maxSteps} steps (max_steps)`);
        messages.push(res.message);
        for (const call of calls) {
          const tool = config.tools?.find((t) => t.name === call.tool);
          const result = await callTool(start, sink, call, tool);
          messages.push(create(MessageSchema, { role: "tool", parts: [{ part: { case: "toolResult", value: result } }] }));
        }
      }
    },
  };
}

/** One of the model's tool calls, at the tool's declared tier; unknown tools answer an error to the model. */
async function callTool(
  start: HarnessStart,
  sink: EventSink,
  call: { id: string; tool: string; args?: JsonObject },
  tool: ChatTool | undefined,
): Promise<ToolResult> {
  if (!tool) {
    return create(ToolResultSchema, {
      id: call.id,
      isError: true,
      error: `unknown tool ${call.tool}`,
      content: [{ part: { case: "text", value: { text: `There is no tool named ${call.tool}.` } } }],
    });
  }
  const mediation = tool.mediation === "REQUIRES_APPROVAL" ? Mediation.REQUIRES_APPROVAL : Mediation.CONTROLLER_MEDIATED;
  const request = create(ToolCallSchema, { id: call.id, tool: call.tool, args: call.args, mediation, idempotencyKey: `${start.executionId}/${call.id}` });
  try {
    return await sink.toolCall(request, { approvalTimeoutSeconds: tool.approval_timeout_seconds });
  } catch {
    // The model hears about a failed call and may recover. The text is fixed, not the error's
    // message: a replay hands the harness the same failure without its live wording, and the next
    // model request must be identical (I0). Conditions that stop the turn (a park, a refused call,
    // a cancel) are latched by the host: the next sink call fails with them anyway.
    return create(ToolResultSchema, {
      id: call.id,
      isError: true,
      error: "the tool call failed",
      content: [{ part: { case: "text", value: { text: `The tool ${call.tool} failed; it may not have run.` } } }],
    });
  }
}

function definitionOf(t: ChatTool): ToolDefinition {
  return create(ToolDefinitionSchema, { name: t.name, description: t.description ?? "", inputSchema: t.input_schema ?? t.inputSchema ?? { type: "object" } });
}

/**
 * The config with the MCP server's tools merged in, listed through the host (a recorded
 * `tools/list` call). A listing that fails fails the turn: offering fewer tools than asked for
 * would change what the model can do without saying so.
 */
async function withMcpTools(start: HarnessStart, sink: EventSink, config: ChatConfig): Promise<ChatConfig> {
  if (!config.mcp_tools) return config;
  const request = create(ToolCallSchema, {
    ...MCP_TOOLS_LIST_CALL,
    args: {},
    mediation: Mediation.CONTROLLER_MEDIATED,
    idempotencyKey: `${start.executionId}/${MCP_TOOLS_LIST_CALL.tool}`,
  });
  const listed = await sink.toolCall(request);
  const tools = (listed.output as { tools?: unknown } | undefined)?.tools;
  if (listed.isError || !Array.isArray(tools)) throw new Error("the MCP server's tool list could not be read (mcp_tools needs TOOL_MCP_URL on the host)");
  const wanted = Array.isArray(config.mcp_tools) ? new Set(config.mcp_tools) : undefined;
  const own = new Map((config.tools ?? []).map((t) => [t.name, t]));
  const merged: ChatTool[] = [];
  for (const t of tools as { name?: unknown; description?: unknown; inputSchema?: unknown }[]) {
    if (typeof t?.name !== "string" || (wanted && !wanted.has(t.name))) continue;
    const mine = own.get(t.name);
    own.delete(t.name);
    const schema = t.inputSchema && typeof t.inputSchema === "object" ? (t.inputSchema as JsonObject) : undefined;
    merged.push({
      name: t.name,
      description: mine?.description ?? (typeof t.description === "string" ? t.description : ""),
      input_schema: mine?.input_schema ?? mine?.inputSchema ?? schema,
      mediation: mine?.mediation,
      approval_timeout_seconds: mine?.approval_timeout_seconds,
    });
  }
  return { ...config, tools: [...merged, ...own.values()] };
}

/** A non-JSON config fails the turn when the harness runs, as in the reference. */
export function parseChatConfig(bytes: Uint8Array): ChatConfig {
  if (bytes.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    throw new Error('chat config must be a JSON object, e.g. {"system_prompt": "…"}');
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("chat config must be a JSON object");
  const c = v as Record<string, unknown>;
  if (c.system_prompt !== undefined && typeof c.system_prompt !== "string") throw new Error("chat config system_prompt must be a string");
  if (c.model !== undefined && typeof c.model !== "string") throw new Error("chat config model must be a string");
  if (c.max_steps !== undefined && !(Number.isInteger(c.max_steps) && (c.max_steps as number) >= 1))
    throw new Error("chat config max_steps must be a positive integer");
  if (c.max_history_tokens !== undefined && !(Number.isInteger(c.max_history_tokens) && (c.max_history_tokens as number) >= 1))
    throw new Error("chat config max_history_tokens must be a positive integer (an estimated token count)");
  if (c.mcp_tools !== undefined && typeof c.mcp_tools !== "boolean" && !(Array.isArray(c.mcp_tools) && c.mcp_tools.every((n) => typeof n === "string"))) {
    throw new Error("chat config mcp_tools must be true, false or a list of tool names");
  }
  if (c.tools !== undefined) {
    if (!Array.isArray(c.tools)) throw new Error("chat config tools must be a list");
    for (const t of c.tools as unknown[]) {
      const tool = t as Record<string, unknown>;
      if (!tool || typeof tool.name !== "string" || tool.name === "") throw new Error("every chat tool needs a name");
      if (tool.mediation !== undefined && tool.mediation !== "CONTROLLER_MEDIATED" && tool.mediation !== "REQUIRES_APPROVAL") {
        throw new Error(`chat tool ${tool.name}: mediation must be CONTROLLER_MEDIATED or REQUIRES_APPROVAL (the chat harness executes no tools itself)`);
      }
      for (const spelling of ["input_schema", "inputSchema"] as const) {
        const schema = tool[spelling];
        if (schema !== undefined && (typeof schema !== "object" || schema === null || Array.isArray(schema))) {
          throw new Error(`chat tool ${tool.name}: ${spelling} must be a JSON object`);
        }
      }
      if (tool.input_schema !== undefined && tool.inputSchema !== undefined) {
        throw new Error(`chat tool ${tool.name}: give input_schema or inputSchema (MCP's spelling), not both`);
      }
      if (tool.description !== undefined && typeof tool.description !== "string") throw new Error(`chat tool ${tool.name}: description must be a string`);
      // Otherwise "abc" or -5 would silently mean "no deadline" on an approval gate.
      const secs = tool.approval_timeout_seconds;
      if (secs !== undefined && !(typeof secs === "number" && Number.isFinite(secs) && secs >= 0))
        throw new Error(`chat tool ${tool.name}: approval_timeout_seconds must be a number of seconds`);
    }
  }
  return c as ChatConfig;
}

/**
 * The turn's conversation after a compaction, when `max_history_tokens` asks for one and the
 * history's conversation is over it; undefined otherwise. The decision depends only on the history
 * and the config, so a replay or a recovery makes the same one (and the host serves the summary).
 */
async function compacted(start: HarnessStart, sink: EventSink, config: ChatConfig): Promise<Message[] | undefined> {
  const budget = config.max_history_tokens;
  if (budget === undefined || !sink.compact || start.history.length === 0) return undefined;
  const chain = chainOf(start.history, config.system_prompt || undefined);
  const head = chain.system === undefined ? 0 : 1;
  const past = chain.messages.slice(head, chain.sealed).concat(unanswered(new Map(chain.open)));
  if (estimateTokens(past) <= budget) return undefined;
  const system = chain.messages.slice(0, head);
  const res = await sink.compact({ model: config.model ?? "", messages: [...system, ...past, textMessage("user", COMPACTION_PROMPT)] });
  return [...system, summaryMessage(res.message), ...start.inputs];
}

/** A summary as the model reads it: a system message (the same object for the same summary). */
const summaries = new WeakMap<Message, Message>();

function summaryMessage(summary: Message): Message {
  let m = summaries.get(summary);
  if (!m) {
    m = textMessage("system", SUMMARY_PREFIX + textOf(summary));
    summaries.set(summary, m);
  }
  return m;
}

/** Estimated tokens per character of text or JSON (about four characters a token for English). */
const CHARS_PER_TOKEN = 4;
const tokenCounts = new WeakMap<Message, number>();

/**
 * A cheap, deterministic token estimate of messages: their text, tool arguments and results, at
 * four characters a token. Not a tokenizer: `max_history_tokens` is a budget, not a hard limit.
 */
export function estimateTokens(messages: readonly Message[]): number {
  let total = 0;
  for (const m of messages) {
    let n = tokenCounts.get(m);
    if (n === undefined) {
      let chars = m.role.length;
      for (const p of m.parts) {
        const v = p.part;
        if (v.case === "text") chars += v.value.text.length;
        else if (v.case === "toolCall") chars += v.value.tool.length + v.value.id.length + JSON.stringify(v.value.args ?? {}).length;
        else if (v.case === "toolResult")
          chars += JSON.stringify(v.value.output ?? {}).length + v.value.error.length + textOf(create(MessageSchema, { parts: v.value.content })).length;
        else chars += 16;
      }
      n = Math.ceil(chars / CHARS_PER_TOKEN);
      tokenCounts.set(m, n);
    }
    total += n;
  }
  return total;
}

/**
 * System prompt, then the prior conversation in journal order, then this turn's inputs once. The
 * array is the conversation's chain (below), grown in place: what the history says is sealed
 * (runtimes/harness-spi.ts `sealMessages`), and the turn's own messages follow it until the next
 * turn continues the chain. Only this turn may use it.
 */
export function conversation(start: HarnessStart, config: ChatConfig): Message[] {
  const chain = chainOf(start.history, config.system_prompt || undefined);
  const messages = chain.messages;
  for (const m of unanswered(new Map(chain.open))) messages.push(m);
  for (const m of start.inputs) messages.push(m);
  return messages;
}

/**
 * A session's conversation as its turns build it, one array grown in place. Its first `sealed`
 * entries are the system prompt (if any) and what the history says, built from `length` history
 * events; they never change. Past them the last turn's inputs and its steps' messages, cut off
 * when the next turn continues the chain.
 */
interface Chain {
  messages: Message[];
  sealed: number;
  length: number;
  open: Map<string, string>;
  system: string | undefined;
}

/**
 * The last chain built, keyed by the last history event it was built from. A session's next turn
 * hands the same history event objects plus its new ones (the host keeps them:
 * objects/session/session-cache.ts), so its conversation continues from there instead of being
 * rebuilt from the first record each turn (issue 12). Only the latest entry of a chain is kept.
 */
const chains = new WeakMap<Event, Chain>();

/** How far back from a history's end a previous turn's last event is looked for. */
const LOOK_BACK = 4096;

function chainOf(history: readonly Event[], system: string | undefined): Chain {
  let chain: Chain | undefined;
  for (let i = history.length - 1; i >= 0 && i >= history.length - LOOK_BACK; i--) {
    const prev = chains.get(history[i]!);
    if (prev && prev.length === i + 1) {
      chains.delete(history[i]!);
      // A turn whose config changed the system prompt starts a chain of its own.
      if (prev.system === system) chain = prev;
      break;
    }
  }
  if (!chain) {
    // A history that starts at a compaction point starts with its summary (runtimes/compaction.ts).
    const point = compactionOf(history);
    const messages = system === undefined ? [] : [textMessage("system", system)];
    if (point) messages.push(summaryMessage(point.summary));
    chain = { messages, sealed: messages.length, length: point ? 2 : 0, open: new Map(), system };
  }
  // The previous turn's own messages go: the history now says what became of them.
  chain.messages.length = chain.sealed;
  for (let i = chain.length; i < history.length; i++) conversational(history[i]!, chain.open, chain.messages);
  chain.length = history.length;
  chain.sealed = chain.messages.length;
  sealMessages(chain.messages, chain.sealed);
  const last = history[history.length - 1];
  if (last) chains.set(last, chain);
  return chain;
}

/** INPUT and OUTPUT messages; a TOOL_RESULT only when it answers a tool call the model made. */
function conversational(ev: Event, openCalls: Map<string, string>, out: Message[]): void {
  if ((ev.kind === EventKind.EVENT_INPUT || ev.kind === EventKind.EVENT_OUTPUT) && ev.body.case === "message") {
    if (openCalls.size > 0) out.push(...unanswered(openCalls));
    if (ev.kind === EventKind.EVENT_OUTPUT)
      for (const p of ev.body.value.parts) if (p.part.case === "toolCall") openCalls.set(p.part.value.id, p.part.value.tool);
    out.push(ev.body.value);
    return;
  }
  if (ev.kind === EventKind.EVENT_TOOL_RESULT && ev.body.case === "result" && openCalls.delete(ev.body.value.id)) {
    out.push(toolMessage(ev.body.value));
  }
}

/**
 * Error results for the open calls that no TOOL_RESULT answered before the next message: an unknown
 * tool (answered in the turn but never journaled), or a turn that failed or hit max_steps.
 * OpenAI-compatible providers refuse an assistant tool call that no tool message answers, so
 * without these every later turn of the session would fail.
 */
function unanswered(openCalls: Map<string, string>): Message[] {
  const out = [...openCalls].map(([id, tool]) =>
    toolMessage(
      create(ToolResultSchema, {
        id,
        isError: true,
        error: `no result was recorded for this call of ${tool}`,
        content: [{ part: { case: "text", value: { text: `The call of ${tool} has no result.` } } }],
      }),
    ),
  );
  openCalls.clear();
  return out;
}

/**
 * The tool message answering a result, the same object for the same recorded result on every turn:
 * the host continues its input hash over messages it has seen before (objects/controller/input-hash.ts).
 */
const toolMessages = new WeakMap<ToolResult, Message>();

function toolMessage(result: ToolResult): Message {
  let m = toolMessages.get(result);
  if (!m) {
    m = create(MessageSchema, { role: "tool", parts: [{ part: { case: "toolResult", value: result } }] });
    toolMessages.set(result, m);
  }
  return m;
}
