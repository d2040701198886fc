/**
 * The HTTP runtime: a Runtime SPI client of any backend serving `agentsessions.edge.v1.Runtime`
 * over Connect (docs/runtimes.md). Everything not listed here is internal.
 * @experimental
 */
export { createHttpRuntime, HTTP_RUNTIME, type HttpRuntime, type HttpRuntimeOptions } from "./http-runtime.js";
export {
  classifyRuntimeFailure,
  httpRuntimeError,
  isRetryableRuntimeError,
  retryAfterMsOf,
  RETRY_AFTER_MS_HEADER,
  type RuntimeFailure,
} from "./http-runtime-error.js";
