/**
 * proto/: the wire contract (generated code in gen/), its canonical form and content hash, the
 * normal form of journaled events, identifier formats and the chain verifier.
 */
export * from "./canon.js";
export * from "./normalize.js";
export * from "./ids.js";
export * from "./messages.js";
export * from "./verify.js";
export { jcs, CANONICAL_JSON_OPTIONS } from "./canonical-json.js";
export { ChainCheck, verifyChainAsync, webSha256Hex } from "./chain-check.js";
