/**
 * The substrate bridge: a Runtime service backend (docs/runtimes.md "The substrate bridge") that
 * places each session on an agent-substrate actor, with memory snapshots and memory forks, over
 * ateapi's gRPC control API (pinned to its G3 generation: proto/ateapi/control.proto). Node only
 * (never imported by workerd code). Everything not listed here is internal.
 * @experimental
 */
export { startSubstrateServer, type SubstrateServer, type SubstrateServerOptions } from "./substrate-server.js";
export { SUBSTRATE_RUNTIME, type HostedHarness } from "./substrate-service.js";
export { loadHostedHarness } from "./hosted-harness.js";
export { forkTagName } from "./memory-fork.js";
export { TARGET_ACTOR_HEADER } from "./attach.js";
export { classifyAteapiFailure, isRetryableSubstrateError, type SubstrateFailure } from "./substrate-error.js";
export { startAttachAgent, ATTACH_TOKEN_ENV, type AttachAgent, type AttachAgentOptions } from "./agent/attach-agent.js";
