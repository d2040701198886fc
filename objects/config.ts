/**
 * The host's configuration, read once from Worker vars and secrets (wrangler.toml, `wrangler
 * secret`, or locally the shell that runs `npm start` / .dev.vars). Secrets stay in this object:
 * nothing here is logged or journaled.
 */
import type { OpenAiChatConfig } from "./models/openai-chat.js";

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
  /** "1" serves the test-only harnesses (runtimes/builtin/testing.ts); never set in a deployment. */
  TEST_HARNESSES?: string;
}

export interface HostConfig {
  /** The OpenAI-compatible provider, when MODEL_BASE_URL is set. */
  model?: OpenAiChatConfig;
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
    testHarnesses: env.TEST_HARNESSES === "1",
  };
}
