/**
 * objects/: the Durable Objects and the session core they host. The Worker imports only these.
 */
export { SessionObject } from "./session/object.js";
export { Directory } from "./directory/object.js";
export { BenchObject } from "./bench-object.js";
export { HarnessTunnel } from "./tunnel/object.js";
export { TenantLimiter } from "./limits/object.js";
export { sessionStub, directoryStub, tunnelStub, limiterStub, type Env } from "./env.js";
export type { LimitSettings } from "./limits/tenant-limits.js";
export { FrameDecoder, type Frame } from "./exec-frames.js";
export { failure, type Failure, type FailureReason, type Outcome } from "./session/outcomes.js";
export type { StoredRecord } from "./journal/journal.js";
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./directory/directory-store.js";
