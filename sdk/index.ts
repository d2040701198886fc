/**
 * The agentsessions TypeScript SDK: a client for the Sessions API and our Audit extension, the
 * generated types of both, the canonical hash and chain verifier, and (for harness authors) the
 * Harness SPI.
 */
export {
  SessionsClient,
  createSessionsClient,
  describeError,
  codeName,
  DEFAULT_SERVER,
  type ApproveOptions,
  type ClientOptions,
  type CancelOptions,
  type CancelReason,
  type CreateOptions,
  type ExecOptions,
  type ExecResult,
  type ForkOptions,
  type VerifyOptions,
} from "./client.js";
export type { TailEvent, TailOptions } from "./tail.js";
export { contentHash, canonicalRecordString, specDigest, modelInputHash } from "../proto/canon.js";
export { ChainVerifier, servedRecordOf, verifyChain, type ChainRecord, type ChainReport, type ServedRecord } from "../proto/verify.js";
export { textOf, userText, assistantText, eventKindName } from "../proto/messages.js";
export type { Harness, HarnessStart, EventSink, ModelRequest, ModelResponse } from "../runtimes/harness-spi.js";
export { compactionOf, type CompactionPoint } from "../runtimes/compaction.js";
export * from "../proto/gen/agentsessions/v1/common_pb.js";
export * from "../proto/gen/agentsessions/v1/session_pb.js";
export * from "../proto/gen/agentsessions/v1/harness_pb.js";
export * from "../proto/gen/agentsessions/edge/v1/audit_pb.js";
export * from "../proto/gen/agentsessions/edge/v1/blobs_pb.js";
export { sha256Bytes } from "./client.js";
export {
  blobRefsOf,
  resolveEvent,
  parseBlobUri,
  parseSha256,
  BlobMismatchError,
  BLOB_URI_PREFIX,
  BLOB_REF_KEY,
  type BlobReference,
  type BlobLocator,
} from "../proto/blob-ref.js";
export * from "../proto/gen/agentsessions/edge/v1/retention_pb.js";
export * from "../proto/gen/agentsessions/edge/v1/tail_pb.js";
