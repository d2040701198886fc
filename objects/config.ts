/**
 * The host's configuration, read once from Worker vars and secrets (wrangler.toml, `wrangler
 * secret`, or locally the shell that runs `npm start` / .dev.vars). Secrets stay in this object:
 * nothing here is logged or journaled.
 */
import { DEFAULT_BLOB_INLINE_MAX_BYTES } from "../proto/blob-ref.js";
import { DEFAULT_CACHE_MAX_HEAP_BYTES } from "./session/session-cache.js";
import type { OpenAiChatConfig } from "./models/openai-chat.js";
import type { HttpExecutorConfig } from "./tools/http-executor.js";
import type { McpExecutorConfig } from "./tools/mcp-executor.js";

export interface ConfigEnv {
  MODEL_BASE_URL?: string;
  /** Secret. Falls back to OPENAI_API_KEY, as the reference daemon does. */
  MODEL_API_KEY?: string;
  /** Secret: read when MODEL_API_KEY is unset. */
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
  /** Bounds each tool call, for the webhook and the MCP server alike (default 30000). */
  TOOL_EXECUTOR_TIMEOUT_MS?: string;
  /** An MCP server (Streamable HTTP) that runs the host-executed calls instead of the webhook (docs/tools.md). */
  TOOL_MCP_URL?: string;
  /** Secret: sent to the MCP server as a bearer token. */
  TOOL_MCP_TOKEN?: string;
  /** Default approval deadline in seconds for gated calls that declare none (unset or 0: none). */
  APPROVAL_TIMEOUT_SECONDS?: string;
  /** "1" serves the test-only harnesses (runtimes/builtin/testing.ts); never set in a deployment. */
  TEST_HARNESSES?: string;
  /** Retention (docs/retention.md): most sessions one Directory alarm run deletes (default 50). */
  RETENTION_BATCH?: string;
  /** Retention: seconds between sweeps once nothing is waiting (default 3600). */
  RETENTION_SWEEP_SECONDS?: string;
  /** Retention: the length of a retention "day" in seconds. Tests only; a deployment leaves it unset (86400). */
  RETENTION_DAY_SECONDS?: string;
  /** This host's base URL as runtime backends reach it (their incarnations dial back to its tunnel). */
  PUBLIC_URL?: string;
  /**
   * Secret: the bearer token this host sends to Runtime service backends (registered http_runtime
   * harnesses: the pod runtime, the substrate bridge), which refuse calls without theirs
   * (docs/runtimes.md "Authentication"). Unset: no Authorization header is sent.
   */
  RUNTIME_TOKEN?: string;
  /** Origins a browser app may call the API from, comma- or space-separated, or `*`; none by default (worker/cors.ts). */
  CORS_ALLOWED_ORIGINS?: string;
  /** keys, jwt, or none (local development only); unset refuses every request (docs/security.md). */
  AUTH_MODE?: string;
  /** Secret: the API key table, a JSON list of {id, sha256, tenant, principal, roles}. */
  AUTH_KEYS?: string;
  AUTH_JWT_ISSUER?: string;
  AUTH_JWT_AUDIENCE?: string;
  /** The trusted public keys, a JWKS (`{"keys": [...]}`): RS256 and ES256. */
  AUTH_JWT_JWKS?: string;
  /** The IdP's published key set (its jwks_uri), fetched and refreshed; with or instead of AUTH_JWT_JWKS. */
  AUTH_JWT_JWKS_URL?: string;
  /** How long a fetched key set is used before it is fetched again (default 600). */
  AUTH_JWT_JWKS_TTL_SECONDS?: string;
  /** The least time between early refetches (an unknown kid, a failed fetch), 1–3600 (default 30). */
  AUTH_JWT_JWKS_REFETCH_SECONDS?: string;
  AUTH_JWT_TENANT_CLAIM?: string;
  AUTH_JWT_PRINCIPAL_CLAIM?: string;
  AUTH_JWT_ROLES_CLAIM?: string;
  AUTH_JWT_SKEW_SECONDS?: string;
  /** Limits and quotas (docs/security.md); each unset one takes its default below. */
  MAX_REQUEST_BYTES?: string;
  MAX_INPUTS_PER_EXEC?: string;
  MAX_EVENT_BYTES?: string;
  /** Parts over this many bytes are stored in the BLOBS bucket, referenced from the record (docs/blobs.md). */
  BLOB_INLINE_MAX_BYTES?: string;
  MAX_STRUCT_DEPTH?: string;
  MAX_FORK_COUNT?: string;
  MAX_CONCURRENT_EXECS?: string;
  RATE_LIMIT_PER_SECOND?: string;
  RATE_LIMIT_BURST?: string;
  /** Tail (docs/follow.md): heartbeat on an idle follow, idle limit, and one follower's queue bound. */
  TAIL_HEARTBEAT_MS?: string;
  TAIL_IDLE_LIMIT_MS?: string;
  TAIL_MAX_QUEUE_BYTES?: string;
  /** The least level of log line written: debug, info (the default), warn or error (objects/log-line.ts). */
  LOG_LEVEL?: string;
  /** Memory a session object keeps its decoded journal in, as estimated (objects/session/session-cache.ts); 0 keeps none. */
  JOURNAL_CACHE_MAX_BYTES?: string;
}

/** What one request, one event and one tenant may use. Every limit is refused before anything is written. */
export interface HostLimits {
  /** Request body, before it is parsed (RESOURCE_EXHAUSTED). */
  maxRequestBytes: number;
  /** Inputs in one Exec (INVALID_ARGUMENT). */
  maxInputsPerExec: number;
  /** One journaled event, encoded (RESOURCE_EXHAUSTED); never above the storage row limit. */
  maxEventBytes: number;
  /** A part over this many bytes goes to the BLOBS bucket and its record carries a reference (docs/blobs.md). */
  blobInlineMaxBytes: number;
  /** Nesting of google.protobuf.Struct/ListValue in a request (INVALID_ARGUMENT). */
  maxStructDepth: number;
  /** Children of one Fork (INVALID_ARGUMENT); never above the contract's 128. */
  maxForkCount: number;
  /** Executions running at once per tenant, 0 for none (RESOURCE_EXHAUSTED). */
  maxConcurrentExecs: number;
  /** Requests per second per tenant, sustained and at once; rate 0 turns it off (RESOURCE_EXHAUSTED). */
  ratePerSecond: number;
  rateBurst: number;
  /** Tail followers: heartbeat after this idle time, end after this one, cut off past this many queued bytes. */
  follow: { heartbeatMs: number; idleLimitMs: number; maxQueueBytes: number };
  /** Memory one session object keeps its decoded journal in (heapEstimate); past it, reads go to SQLite. */
  journalCacheMaxBytes: number;
  /** Variables that were set but not a valid value, so their default applies: logged once (worker/index.ts). */
  ignored: string[];
}

/** A Durable Object row holds at most 2 MB; an event row also carries its hashes and fence. */
const STORAGE_EVENT_CEILING = 1_900_000;
const CONTRACT_MAX_FORK = 128;

export function hostLimits(env: ConfigEnv): HostLimits {
  const ignored: string[] = [];
  /** A positive whole number (or 0 where allowed); unset is the default, anything else is noted and the default. */
  const whole = (name: keyof ConfigEnv, fallback: number, zeroAllowed = false): number => {
    const v = env[name];
    if (v === undefined || v.trim() === "") return fallback;
    const n = Number(v);
    if (Number.isInteger(n) && (n > 0 || (zeroAllowed && n === 0))) return n;
    ignored.push(name);
    return fallback;
  };
  return {
    maxRequestBytes: whole("MAX_REQUEST_BYTES", 4 * 1024 * 1024),
    maxInputsPerExec: whole("MAX_INPUTS_PER_EXEC", 64),
    maxEventBytes: Math.min(whole("MAX_EVENT_BYTES", 1_000_000), STORAGE_EVENT_CEILING),
    blobInlineMaxBytes: whole("BLOB_INLINE_MAX_BYTES", DEFAULT_BLOB_INLINE_MAX_BYTES),
    maxStructDepth: whole("MAX_STRUCT_DEPTH", 32),
    maxForkCount: Math.min(whole("MAX_FORK_COUNT", CONTRACT_MAX_FORK), CONTRACT_MAX_FORK),
    maxConcurrentExecs: whole("MAX_CONCURRENT_EXECS", 32, true),
    ratePerSecond: whole("RATE_LIMIT_PER_SECOND", 200, true),
    rateBurst: whole("RATE_LIMIT_BURST", 1000),
    follow: {
      heartbeatMs: whole("TAIL_HEARTBEAT_MS", 15_000),
      idleLimitMs: whole("TAIL_IDLE_LIMIT_MS", 600_000),
      maxQueueBytes: whole("TAIL_MAX_QUEUE_BYTES", 4 * 1024 * 1024),
    },
    journalCacheMaxBytes: whole("JOURNAL_CACHE_MAX_BYTES", DEFAULT_CACHE_MAX_HEAP_BYTES, true),
    ignored,
  };
}

export interface HostConfig {
  /** The OpenAI-compatible provider, when MODEL_BASE_URL is set. */
  model?: OpenAiChatConfig;
  /** The tool executor webhook, when TOOL_EXECUTOR_URL is set and TOOL_MCP_URL is not. */
  executor?: HttpExecutorConfig;
  /** The MCP server that executes tools, when TOOL_MCP_URL is set (it wins over the webhook). */
  mcp?: McpExecutorConfig;
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
    executor:
      env.TOOL_EXECUTOR_URL?.trim() && !env.TOOL_MCP_URL?.trim()
        ? { url: env.TOOL_EXECUTOR_URL.trim(), token: env.TOOL_EXECUTOR_TOKEN || undefined, timeoutMs: positive(env.TOOL_EXECUTOR_TIMEOUT_MS) }
        : undefined,
    mcp: env.TOOL_MCP_URL?.trim()
      ? { url: env.TOOL_MCP_URL.trim(), token: env.TOOL_MCP_TOKEN || undefined, timeoutMs: positive(env.TOOL_EXECUTOR_TIMEOUT_MS) }
      : undefined,
    approvalTimeoutSeconds: positive(env.APPROVAL_TIMEOUT_SECONDS),
    testHarnesses: env.TEST_HARNESSES === "1",
  };
}

function positive(v: string | undefined): number | undefined {
  const n = v === undefined ? NaN : Number(v);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/** The token for Runtime service backends, or undefined when none is configured. */
export function runtimeToken(env: ConfigEnv): string | undefined {
  return env.RUNTIME_TOKEN?.trim() || undefined;
}
