/**
 * The model provider with each call timed as the `model` phase of the request it serves
 * (objects/request-context.ts): one `phase` line per provider call, joined to the RPC's line by
 * request id. Wrapped around the configured provider in objects/session/object.ts.
 */
import type { ModelProvider } from "../controller/models.js";
import { timePhase } from "../request-context.js";

export function timedProvider(p: ModelProvider): ModelProvider {
  return { complete: (req, opts) => timePhase("model", () => p.complete(req, opts)) };
}
