/**
 * Classifies failures of an OpenAI-compatible provider: retryable or terminal, and a
 * message that says what happened without the request, the response body's content or the key.
 */
import { ModelProviderError } from "../controller/errors.js";
import { clipText } from "../../proto/messages.js";

export interface ProviderFailure {
  retryable: boolean;
  /** Seconds the provider asked us to wait (Retry-After), when it said. */
  retryAfter?: number;
  message: string;
}

export function classifyHttpFailure(status: number, body: string, retryAfterHeader: string | null): ProviderFailure {
  const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
  const retryAfter = retryAfterHeader && /^\d+$/.test(retryAfterHeader) ? Number(retryAfterHeader) : undefined;
  const detail = providerErrorDetail(body);
  const what = status === 401 || status === 403 ? `rejected the credentials (HTTP ${status}; check MODEL_API_KEY)` : `answered HTTP ${status}`;
  return { retryable, retryAfter, message: `model provider ${what}${detail ? `: ${detail}` : ""}` };
}

export function providerError(f: ProviderFailure, cause?: unknown): ModelProviderError {
  return new ModelProviderError(f.message + (f.retryable ? " (retryable: Resume or retry the turn)" : ""), { cause });
}

/** The provider's own error type/message, shortened; never the whole body. */
function providerErrorDetail(body: string): string {
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown; type?: unknown; code?: unknown } | string };
    const e = j.error;
    if (typeof e === "string") return clipText(e, 200);
    const msg = typeof e?.message === "string" ? e.message : typeof e?.type === "string" ? e.type : "";
    return clipText(msg, 200);
  } catch {
    return "";
  }
}
