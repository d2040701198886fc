/**
 * Host-mediated model calls: the controller asks a `ModelInvoker`, never the harness's own SDK.
 * The invoker picks a provider by model id (echo is always there; issue 3 adds an
 * OpenAI-compatible provider).
 */
import type { ModelRequest, ModelResponse } from "../../runtimes/harness-spi.js";
import { ECHO_MODEL, echoModel } from "../../runtimes/builtin/echo.js";
import { ModelProviderError } from "./errors.js";

export interface InvokeOptions {
  signal: AbortSignal;
  /** Streamed text chunks of the completion, relayed as ephemeral deltas (never journaled). */
  onDelta?: (chunk: string) => void;
}

export interface ModelInvoker {
  invoke(req: ModelRequest, opts: InvokeOptions): Promise<ModelResponse>;
}

/** The providers this host serves; `echo` answers locally and deterministically. */
export function createModelInvoker(): ModelInvoker {
  return {
    async invoke(req) {
      if (req.model === ECHO_MODEL) return echoModel(req);
      throw new ModelProviderError(`no model provider is configured for model "${req.model}"`);
    },
  };
}
