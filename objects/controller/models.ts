/**
 * Host-mediated model calls: the controller asks a `ModelInvoker`, never the harness's own SDK.
 *
 * A harness names the model it wants; "" means the session's model, else the deployment default
 * (`resolve`). The invoker routes `echo` to the built-in echo model and everything else to the
 * configured provider (objects/models/), counting every live call so replay can prove it made none.
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
  /** The model a request for `requested` runs on. */
  resolve(requested: string): string;
  /** Whether a provider on this host can serve `model`. */
  serves(model: string): boolean;
  /**
   * Whether `model` is answered inside the host with no request leaving it (the echo model): its
   * MODEL_CALL then need not be committed before the call, only before anything leaves the host.
   */
  inProcess?(model: string): boolean;
  /** Invokes the provider for a request whose model is already resolved. */
  invoke(req: ModelRequest, opts: InvokeOptions): Promise<ModelResponse>;
  /** Live provider calls made through this invoker. */
  readonly calls: number;
}

/** A configured model provider (e.g. objects/models/openai-chat.ts). */
export interface ModelProvider {
  complete(req: ModelRequest, opts: InvokeOptions): Promise<ModelResponse>;
}

export interface ModelInvokerOptions {
  /** The session's `model` field. */
  sessionModel?: string;
  /** The deployment's default model (MODEL_DEFAULT). */
  defaultModel?: string;
  /** The provider for every model but echo; undefined when none is configured. */
  provider?: ModelProvider;
}

export function createModelInvoker(o: ModelInvokerOptions = {}): ModelInvoker {
  let calls = 0;
  return {
    // With a provider configured, an unnamed model is a configuration error, not a silent echo.
    resolve: (requested) => requested || o.sessionModel || o.defaultModel || (o.provider ? "" : ECHO_MODEL),
    serves: (model) => model === ECHO_MODEL || (model !== "" && o.provider !== undefined),
    inProcess: (model) => model === ECHO_MODEL,
    async invoke(req, opts) {
      calls++;
      if (req.model === ECHO_MODEL) return echoModel(req);
      if (!o.provider) throw new ModelProviderError(`no model provider serves model "${req.model}" on this host`);
      return o.provider.complete(req, opts);
    },
    get calls() {
      return calls;
    },
  };
}
