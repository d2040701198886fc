/**
 * The pod runtime: a reference backend of the Runtime service (docs/runtimes.md) that runs each
 * session's harness in its own Node child process, dialling back over the host's tunnel. Node only
 * (never imported by workerd code). Everything not listed here is internal.
 * @experimental
 */
export { startPodServer, type PodServer, type PodServerOptions } from "./pod-server.js";
export { loadHarnessModules, parseHarnessFlag, type HarnessModule, type HarnessModules } from "../node/harness-modules.js";
export { POD_RUNTIME } from "./pod-service.js";
export { stdoutLog, type RuntimeLog } from "../node/runtime-log.js";
