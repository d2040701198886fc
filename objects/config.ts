/**
 * The host's configuration, read once from Worker vars and secrets (wrangler.toml, `wrangler
 * secret`, or locally the shell that runs `npm start` / .dev.vars). Secrets stay in this object:
 * nothing here is logged or journaled.
 */
import type { OpenAiChatConfig } from "./models/openai-chat.js";
import type { HttpExecutorConfig } from "./tools/http-executor.js";

export interface ConfigEnv {
  MODEL_BASE_URL?: string;
  /** Secret. Falls back to OPENAI_API_KEY, as the reference daemon does. */
  MODEL_API_KEY?: string;
  OPENAI_API_KEY?: string;
  MODEL_PATH?: string;
  MODEL_AUTH_HEADER?: string;
  MODEL_DEFAULT?: string;
  /** "0" asks the provider for whole responses instead of SSE. */
  MODEL_STREAM?: string;
  /** The tool executor webhook (docs/tools.md). */
  TOOL_EXECUTOR_URL?: string;
  /** Secret: sent to the executor as a bearer token. */
  TOOL_EXECUTOR_TOKEN?: string;
  TOOL_EXECUTOR_TIMEOUT_MS?: string;
  /** Default approval deadline in seconds for gated calls that declare none (unset or 0: none). */
  APPROVAL_TIMEOUT_SECONDS?: string;
  /** "1" serves the test-only harnesses (runtimes/builtin/testing.ts); never set in a deployment. */
  TEST_HARNESSES?: string;
  /** This host's base URL as runtime backends reach it (their incarnations dial back to its tunnel). */
  PUBLIC_URL?: string;
}

export interface HostConfig {
  /** The OpenAI-compatible provider, when MODEL_BASE_URL is set. */
  model?: OpenAiChatConfig;
  /** The tool executor, when TOOL_EXECUTOR_URL is set. */
  executor?: HttpExecutorConfig;
  approvalTimeoutSeconds?: number;
  defaultModel: string;
  testHarnesses: boolean;
}

export function hostConfig(env: ConfigEnv): HostConfig {
  const baseUrl = env.MODEL_BASE_URL?.trim();
  return {
    model: baseUrl
      ? {
          baseUrl,
          path: env.MODEL_PATH || undefined,
          apiKey: env.MODEL_API_KEY || env.OPENAI_API_KEY || undefined,
          authHeader: env.MODEL_AUTH_HEADER || undefined,
          stream: env.MODEL_STREAM !== "0",
        }
      : undefined,
    defaultModel: env.MODEL_DEFAULT ?? "",
    executor: env.TOOL_EXECUTOR_URL?.trim()
      ? { url: env.TOOL_EXECUTOR_URL.trim(), token: env.TOOL_EXECUTOR_TOKEN || undefined, timeoutMs: positive(env.TOOL_EXECUTOR_TIMEOUT_MS) }
      : undefined,
    approvalTimeoutSeconds: positive(env.APPROVAL_TIMEOUT_SECONDS),
    testHarnesses: env.TEST_HARNESSES === "1",
  };
}

function positive(v: string | undefined): number | undefined {
  const n = v === undefined ? NaN : Number(v);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}
