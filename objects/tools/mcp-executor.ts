/**
 * A tool executor that runs host-executed calls on an MCP server over Streamable HTTP
 * (`TOOL_MCP_URL`, docs/tools.md "MCP servers"), with the official MCP TypeScript SDK.
 *
 * It is a `ToolExecutor` like the webhook (http-executor.ts), so the executor contract holds
 * unchanged: the controller journals the intent before `execute` and the answer as the receipt,
 * gates run before it, and a re-drive after a crash asks again with the same key. The key travels
 * as request metadata, `_meta["agentsessions/idempotency-key"]` = `<session uid>/<key>` (and as
 * an `Idempotency-Key` header on the HTTP request); the server must deduplicate by it durably.
 *
 * Besides tools, it answers one MCP method, `tools/list`, so the chat harness can take its tool
 * list from the server as a recorded call (runtimes/builtin/chat.ts, `mcp_tools`): MCP tool names
 * cannot contain "/", so it never shadows a tool.
 *
 * One MCP client per call: the initialize handshake costs round trips (four subrequests a call),
 * but nothing outlives the call: an evicted object or a restarted server never meets a stale MCP
 * session, and no open SSE stream keeps the Durable Object awake between calls. JSON Schema
 * validation uses @cfworker/json-schema, since workerd forbids the code generation Ajv does.
 * Tested against a real MCP server built with the same SDK: test/node/tools/mcp-executor.test.ts
 * and test/node/integration/mcp-tools.test.ts.
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, type CallToolResult, type ContentBlock, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { PartSchema, ToolResultSchema, type Part, type ToolResult } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ToolExecutionError } from "../controller/errors.js";
import type { ToolExecutor, ToolRequest } from "../controller/tools.js";
import { clipText } from "../../proto/messages.js";

export interface McpExecutorConfig {
  /** The server's Streamable HTTP endpoint, e.g. https://tools.example.com/mcp. */
  url: string;
  /** Secret; sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Per-call bound in milliseconds, handshake included (default 30 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** The `_meta` keys of a tools/call (MCP reserves the `mcp`/`modelcontextprotocol` prefixes, not ours). */
export const MCP_META = {
  idempotencyKey: "agentsessions/idempotency-key",
  session: "agentsessions/session",
  executionId: "agentsessions/execution-id",
  callId: "agentsessions/call-id",
} as const;

/** The MCP method a recorded call may name besides a tool: the server's tool list. */
export const MCP_TOOLS_LIST = "tools/list";

const CLIENT_INFO = { name: "agentsessions-edge", version: "1" };
/** A server that pages its tool list forever is not answering. */
const MAX_LIST_PAGES = 20;
const MAX_ERROR_CHARS = 300;

export function createMcpExecutor(cfg: McpExecutorConfig): ToolExecutor {
  const timeoutMs = cfg.timeoutMs ?? 30_000;
  const host = new URL(cfg.url).host;
  return {
    async execute(req: ToolRequest, signal: AbortSignal): Promise<ToolResult> {
      const key = `${req.sessionUid}/${req.call.idempotencyKey}`;
      const headers: Record<string, string> = { "idempotency-key": key };
      if (cfg.token) headers.authorization = `Bearer ${cfg.token}`;
      const timeout = AbortSignal.timeout(timeoutMs);
      const bound = AbortSignal.any([signal, timeout]);
      const transport = new StreamableHTTPClientTransport(new URL(cfg.url), {
        requestInit: { headers },
        fetch: cfg.fetch,
        // A dropped answer is not resumed: the call fails here and Resume asks again with the key.
        reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
      });
      const client = new Client(CLIENT_INFO, { capabilities: {}, jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
      const options = { signal: bound, timeout: timeoutMs };
      try {
        await client.connect(transport, options);
        if (req.call.tool === MCP_TOOLS_LIST) return listReceipt(req, await listAll(client, options));
        const meta = {
          [MCP_META.idempotencyKey]: key,
          [MCP_META.session]: req.sessionUid,
          [MCP_META.executionId]: req.executionId,
          [MCP_META.callId]: req.call.id,
        };
        const answer = (await client.callTool(
          { name: req.call.tool, arguments: (req.call.args ?? {}) as Record<string, unknown>, _meta: meta },
          undefined,
          options,
        )) as CallToolResult;
        return receiptOf(req, answer);
      } catch (e) {
        if (signal.aborted) throw signal.reason;
        if (e instanceof ToolExecutionError) throw e;
        if (timeout.aborted) throw new ToolExecutionError(`MCP server at ${host} did not answer ${req.call.tool} within ${timeoutMs} ms`, { cause: e });
        if (e instanceof McpError) throw new ToolExecutionError(`MCP server at ${host} refused ${req.call.tool}: ${bounded(e.message)}`, { cause: e });
        throw new ToolExecutionError(`MCP server at ${host} is unreachable or broke off its answer to ${req.call.tool}`, { cause: e });
      } finally {
        await client.close().catch(() => undefined);
      }
    },
  };
}

async function listAll(client: Client, options: { signal: AbortSignal; timeout: number }): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const res = await client.listTools(cursor ? { cursor } : undefined, options);
    tools.push(...res.tools);
    cursor = res.nextCursor;
    if (!cursor) return tools;
  }
  throw new ToolExecutionError(`the MCP server's tool list goes on past ${MAX_LIST_PAGES} pages`);
}

/** The tool list as a receipt: `{tools: [{name, description, inputSchema}]}`, what a harness needs to offer them. */
function listReceipt(req: ToolRequest, tools: Tool[]): ToolResult {
  const listed = tools.map((t) => ({ name: t.name, description: t.description ?? "", inputSchema: t.inputSchema as JsonObject }));
  return create(ToolResultSchema, { id: req.call.id, output: { tools: listed } });
}

/** MCP's CallToolResult as a receipt: structuredContent is the output, content blocks the model-facing parts. */
function receiptOf(req: ToolRequest, a: CallToolResult): ToolResult {
  const content = (a.content ?? []).map(partOf);
  const isError = a.isError === true;
  const text = content.flatMap((p) => (p.part.case === "text" ? [p.part.value.text] : [])).join("\n");
  return create(ToolResultSchema, {
    id: req.call.id,
    output: isObject(a.structuredContent) ? (a.structuredContent as JsonObject) : undefined,
    content,
    isError,
    // A tool-level failure reports itself in its content (MCP puts the error text there).
    error: isError ? bounded(text || "the tool reported an error") : "",
  });
}

function partOf(b: ContentBlock): Part {
  switch (b.type) {
    case "text":
      return create(PartSchema, { part: { case: "text", value: { text: b.text } } });
    case "image":
    case "audio":
      return create(PartSchema, { part: { case: "file", value: { mime: b.mimeType, source: { case: "bytes", value: bytesFromBase64(b.data) } } } });
    case "resource_link":
      return create(PartSchema, { part: { case: "file", value: { mime: b.mimeType ?? "", name: b.name, source: { case: "uri", value: b.uri } } } });
    case "resource": {
      const r = b.resource;
      if ("text" in r && typeof r.text === "string") return create(PartSchema, { part: { case: "text", value: { text: r.text } } });
      const blob = "blob" in r && typeof r.blob === "string" ? r.blob : "";
      return create(PartSchema, {
        part: { case: "file", value: { mime: r.mimeType ?? "", name: r.uri, source: { case: "bytes", value: bytesFromBase64(blob) } } },
      });
    }
    default:
      // A block type newer than this host: kept as data so nothing the server said is lost.
      return create(PartSchema, { part: { case: "data", value: { data: JSON.parse(JSON.stringify(b)) as JsonObject } } });
  }
}

function bytesFromBase64(s: string): Uint8Array {
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch {
    throw new ToolExecutionError("the MCP server answered a content block whose data is not base64");
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const bounded = (s: string) => (s.length > MAX_ERROR_CHARS ? `${clipText(s, MAX_ERROR_CHARS)}…` : s);
