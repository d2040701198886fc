/**
 * The harness SDK (Node): serve a Harness (the SPI in runtimes/harness-spi.ts, docs/contract.md §6.2) to
 * a session host over the tunnel of docs/tunnel.md. The same harness code runs in process
 * (runtimes/builtin) and here unchanged. Everything not listed below is internal.
 *
 * ```ts
 * import { serve } from "./sdk/harness/index.js"; // from the repository root
 * const s = serve({ url: "http://127.0.0.1:8787", name: "my-agent", harness });
 * await s.connected;
 * ```
 * @experimental
 */
export { serve, type ServeOptions, type ServeStatus, type Serving } from "./serve.js";
export { ApprovalParkedError, isApprovalParkedError } from "./errors.js";
export { tunnelUrlFromBase, isHarnessName, TUNNEL_PATH, TUNNEL_SUBPROTOCOL } from "./tunnel-url.js";
export { SDK_AGENT, SDK_VERSION } from "./version.js";
export type { BackoffOptions } from "./backoff.js";
export { compactionOf, type CompactionPoint } from "../../runtimes/compaction.js";
export type { EventSink, Harness, HarnessStart, ModelRequest, ModelResponse, ToolCallOptions } from "../../runtimes/harness-spi.js";
