/**
 * Identifier formats (docs/contract.md §9): session uids are `sess-` + 24 lowercase hex, execution and
 * model-call ids 16 lowercase hex. Branded so a seq, a uid and a hash cannot be swapped by mistake.
 */
import { hexOf } from "./bytes.js";

export type SessionUid = string & { readonly __brand: "SessionUid" };
export type ExecutionId = string & { readonly __brand: "ExecutionId" };
export type TenantId = string & { readonly __brand: "TenantId" };

const SESSION_UID_RE = /^sess-[0-9a-f]{24}$/;
const TENANT_RE = /^[a-z0-9][a-z0-9_.-]{0,62}$/;

export function isSessionUid(s: string): s is SessionUid {
  return SESSION_UID_RE.test(s);
}

/** Returns the uid, or undefined when `s` is not a well-formed session uid. */
export function parseSessionUid(s: string): SessionUid | undefined {
  return isSessionUid(s) ? s : undefined;
}

export function mintSessionUid(): SessionUid {
  return ("sess-" + randomHex(12)) as SessionUid;
}

export function mintExecutionId(): ExecutionId {
  return randomHex(8) as ExecutionId;
}

/** Host-minted ModelCall ids (the recorded MODEL_CALL id is the host's, not the harness's). */
export function mintModelCallId(): string {
  return randomHex(8);
}

export function parseTenantId(s: string): TenantId | undefined {
  return TENANT_RE.test(s) ? (s as TenantId) : undefined;
}

export const DEFAULT_TENANT = "default" as TenantId;

/** Random bytes drawn from the platform's CSPRNG a page at a time; each byte is handed out once. */
const POOL_BYTES = 4096;
let pool = new Uint8Array(0);
let used = 0;

/** `bytes` random bytes as lowercase hex (request ids, execution ids, tokens). */
export function randomHex(bytes: number): string {
  if (bytes > POOL_BYTES) throw new RangeError(`randomHex draws at most ${POOL_BYTES} bytes, not ${bytes}`);
  if (used + bytes > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_BYTES));
    used = 0;
  }
  const s = hexOf(pool.subarray(used, used + bytes));
  pool.fill(0, used, used + bytes);
  used += bytes;
  return s;
}
