/**
 * AUTH_MODE=keys: bearer API keys. The deployment holds only each key's SHA-256 (the AUTH_KEYS
 * secret, a JSON list), each mapped to a tenant, a principal and roles. A presented key is hashed
 * and looked up; the key itself is never stored, compared or logged.
 *
 *   AUTH_KEYS='[{"id":"ci","sha256":"<hex>","tenant":"acme","principal":"ci@acme","roles":["read","write"]}]'
 */
import { sha256Hex } from "../../proto/canon.js";
import { parseTenantId } from "../../proto/ids.js";
import { rolesFrom, type Principal } from "./principal.js";

export interface KeyTable {
  lookup(token: string): Principal | undefined;
  readonly size: number;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Parses AUTH_KEYS; a string says what is wrong (never echoing a hash). */
export function parseKeyTable(raw: string | undefined): KeyTable | string {
  if (!raw?.trim()) return "AUTH_KEYS is empty: add at least one key (see docs/security.md)";
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    return "AUTH_KEYS is not valid JSON: it must be a list of {id, sha256, tenant, principal, roles}";
  }
  if (!Array.isArray(list)) return "AUTH_KEYS must be a JSON list of {id, sha256, tenant, principal, roles}";
  const byHash = new Map<string, Principal>();
  for (const [i, entry] of list.entries()) {
    const e = (entry ?? {}) as Record<string, unknown>;
    const where = `AUTH_KEYS[${i}]${typeof e.id === "string" ? ` (${e.id})` : ""}`;
    const hash = typeof e.sha256 === "string" ? e.sha256.toLowerCase() : "";
    if (!HEX64.test(hash)) return `${where}: sha256 must be the key's SHA-256 as 64 hex digits`;
    const tenant = typeof e.tenant === "string" ? parseTenantId(e.tenant) : undefined;
    if (!tenant) return `${where}: tenant must be lowercase letters, digits, '.', '_' or '-' (at most 63)`;
    if (typeof e.principal !== "string" || !e.principal || e.principal.length > 256) return `${where}: principal must be a non-empty string`;
    if (!Array.isArray(e.roles) || !e.roles.every((r) => typeof r === "string")) return `${where}: roles must be a list of role names`;
    if (byHash.has(hash)) return `${where}: the same key is listed twice`;
    byHash.set(hash, {
      tenant,
      name: e.principal,
      issuer: "apikey",
      subject: typeof e.id === "string" && e.id ? e.id : hash.slice(0, 12),
      roles: rolesFrom(e.roles as string[]),
      anonymous: false,
    });
  }
  return { lookup: (token) => byHash.get(sha256Hex(token)), size: byHash.size };
}
