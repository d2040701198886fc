/**
 * Host-executed tools: the executor the controller calls after the intent is journaled.
 * objects/tools/http-executor.ts is the deployment's webhook; tests use in-process fakes.
 */
import type { ToolCall, ToolResult } from "../../proto/gen/agentsessions/v1/common_pb.js";

export interface ToolRequest {
  sessionUid: string;
  executionId: string;
  /** The call as recorded: id, tool, args, mediation, idempotency key. */
  call: ToolCall;
}

export interface ToolExecutor {
  /** Runs the effect (deduplicated by the executor on session + idempotency key); throws ToolExecutionError on failure. */
  execute(req: ToolRequest, signal: AbortSignal): Promise<ToolResult>;
}
