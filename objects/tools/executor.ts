/**
 * Which tool executor a host runs (docs/tools.md): the MCP server when TOOL_MCP_URL is set, else
 * the webhook when TOOL_EXECUTOR_URL is, else none (host-executed calls then fail closed after
 * their intent is recorded). Every call is timed as the request's `tool` phase
 * (objects/request-context.ts). Constructed in objects/session/object.ts.
 */
import type { HostConfig } from "../config.js";
import type { ToolExecutor } from "../controller/tools.js";
import { timePhase } from "../request-context.js";
import { createHttpExecutor } from "./http-executor.js";
import { createMcpExecutor } from "./mcp-executor.js";

export function createToolExecutor(config: Pick<HostConfig, "mcp" | "executor">): ToolExecutor | undefined {
  const inner = config.mcp ? createMcpExecutor(config.mcp) : config.executor && createHttpExecutor(config.executor);
  return inner && { execute: (req, signal) => timePhase("tool", () => inner.execute(req, signal)) };
}
