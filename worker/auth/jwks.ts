/**
 * The public keys JWTs are verified against (jwt.ts): the static AUTH_JWT_JWKS, the identity
 * provider's published set at AUTH_JWT_JWKS_URL, or both. A published set is fetched when first
 * needed, again when it is older than its TTL, and early when a token names a kid it does not hold
 * (the provider rotated), at most once per refetch gap (AUTH_JWT_JWKS_REFETCH_SECONDS, 30 s by
 * default) so unknown kids cannot make us hammer the provider. When a fetch fails the last good
 * set stays in use; with none yet, verification answers "unavailable". Keys are imported with jose
 * (`importJWK`), which verifies the tokens too (jwt.ts); this module keeps only the policy of which
 * keys to trust and when to fetch them.
 * Test: test/node/auth/jwks.test.ts.
 */
import { importJWK } from "jose";

export type JwkKey = JsonWebKey & { kid?: string; alg?: string };
export type Alg = "RS256" | "ES256";
export interface TrustedKey {
  kid: string | undefined;
  alg: Alg;
  key: CryptoKey | undefined;
}
export type KeysOutcome = { ok: true; keys: TrustedKey[] } | { ok: false; unavailable: string };

/** The public members each accepted key type must have. */
export const ALGS = {
  RS256: { members: ["n", "e"] },
  ES256: { members: ["x", "y"] },
} as const;

/** Early refetches (an unknown kid, a failed fetch) are at least this far apart unless set otherwise. */
export const REFETCH_GAP_SECONDS = 30;
const FETCH_TIMEOUT_MS = 5_000;
/** A JWKS is a few kilobytes; far more is not a key set. */
const MAX_JWKS_BYTES = 256 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The algorithm a public JWK may verify, or undefined if it is not one we accept. */
export function algOfKey(k: { kty?: unknown; crv?: unknown; alg?: unknown }): Alg | undefined {
  if (k.kty === "RSA" && (k.alg === undefined || k.alg === "RS256")) return "RS256";
  if (k.kty === "EC" && k.crv === "P-256" && (k.alg === undefined || k.alg === "ES256")) return "ES256";
  return undefined;
}

/** What is wrong with a key, if anything; `where` names it in the message. */
export function keyProblem(k: unknown, where: string): string | undefined {
  if (!isObject(k)) return `${where} is not a JSON object`;
  if ("d" in k) return `${where} contains private key material ("d"); publish only the public key`;
  const alg = algOfKey(k);
  if (!alg) return `${where} must be an RSA key for RS256 or an EC P-256 key for ES256 (no "oct"/HS*/"none")`;
  const missing = ALGS[alg].members.find((m) => typeof k[m] !== "string");
  if (missing) return `${where} is missing "${missing}"`;
  if (k.kid !== undefined && typeof k.kid !== "string") return `${where} has a non-string "kid"`;
  return undefined;
}

/** The keys of a JWKS document ({"keys": [...]} or a bare list), or why it is not one. */
function keysOf(doc: unknown): unknown[] | undefined {
  const keys = isObject(doc) ? doc.keys : doc;
  return Array.isArray(keys) ? keys : undefined;
}

/** The static AUTH_JWT_JWKS: every key must be acceptable, since an operator wrote it. */
export function parseStaticKeys(raw: string): JwkKey[] | string {
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch {
    return "AUTH_JWT_JWKS is not valid JSON";
  }
  const keys = keysOf(doc);
  if (!keys || keys.length === 0) return 'AUTH_JWT_JWKS must be {"keys":[...]} or an array with at least one key';
  for (const [i, k] of keys.entries()) {
    const problem = keyProblem(k, `AUTH_JWT_JWKS key ${i}`);
    if (problem) return problem;
  }
  return keys as JwkKey[];
}

/**
 * A published JWKS: providers list encryption keys and other algorithms beside their signing keys,
 * so those are skipped rather than refused; a set with no usable signing key is an error.
 */
export function parsePublishedKeys(text: string): JwkKey[] | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return "the JWKS is not valid JSON";
  }
  const keys = keysOf(doc);
  if (!keys) return 'the JWKS is not {"keys":[...]}';
  const usable = keys.filter((k) => keyProblem(k, "key") === undefined && (k as JwkKey).use !== "enc") as JwkKey[];
  return usable.length > 0 ? usable : "the JWKS has no RS256 or ES256 signing key";
}

export async function importTrusted(k: JwkKey): Promise<TrustedKey | undefined> {
  const alg = algOfKey(k);
  if (!alg) return undefined;
  // Only the public members are imported, so a stray `key_ops`, `use` or `ext` cannot make import fail.
  const jwk = alg === "RS256" ? { kty: "RSA", n: k.n, e: k.e } : { kty: "EC", crv: "P-256", x: k.x, y: k.y };
  // A key with bad material (say, a truncated modulus) stays listed but unusable, so its kid is still recognised.
  const key = (await importJWK(jwk, alg).catch(() => undefined)) as CryptoKey | undefined;
  return { kid: k.kid, alg, key };
}

async function importAll(keys: JwkKey[]): Promise<TrustedKey[]> {
  return (await Promise.all(keys.map(importTrusted))).filter((k) => k !== undefined);
}

/** An identity provider's JWKS endpoint: https, or http on a loopback address (local stand-ins). */
export function jwksUrlProblem(raw: string): string | undefined {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "AUTH_JWT_JWKS_URL is not a URL";
  }
  if (u.protocol === "https:") return undefined;
  if (u.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)) return undefined;
  return "AUTH_JWT_JWKS_URL must be https (plain http only on a loopback address)";
}

export interface KeySetOptions {
  staticKeys: JwkKey[];
  url?: string;
  ttlSeconds: number;
  /** The least time between early refetches (default REFETCH_GAP_SECONDS). */
  refetchGapSeconds?: number;
  fetch?: typeof fetch;
  nowMs?: () => number;
}

export interface KeySet {
  /** The keys to try for a token naming `kid` (undefined: all). */
  keys(kid: string | undefined): Promise<KeysOutcome>;
}

export function createKeySet(o: KeySetOptions): KeySet {
  const fetchFn = o.fetch ?? ((input, init) => fetch(input, init));
  const now = o.nowMs ?? Date.now;
  const staticKeys = importAll(o.staticKeys);
  if (!o.url) return { keys: async () => ({ ok: true, keys: await staticKeys }) };
  const url = o.url;
  let published: { keys: TrustedKey[]; at: number } | undefined;
  let lastAttempt = -Infinity;
  let lastError = "";
  let inflight: Promise<void> | undefined;
  const gapMs = (o.refetchGapSeconds ?? REFETCH_GAP_SECONDS) * 1000;

  const refresh = (): Promise<void> =>
    (inflight ??= (async () => {
      lastAttempt = now();
      try {
        const got = await fetchKeys(fetchFn, url);
        if (typeof got === "string") lastError = got;
        else published = { keys: await importAll(got), at: now() };
      } finally {
        inflight = undefined;
      }
    })());

  return {
    async keys(kid) {
      const fixed = await staticKeys;
      const holds = (ks: TrustedKey[] | undefined) => ks?.some((k) => k.kid === kid) ?? false;
      const unknownKid = kid !== undefined && !holds(fixed) && !holds(published?.keys);
      // None yet, too old, or the provider may have rotated: fetch (or join the fetch under way),
      // unless the last attempt was moments ago.
      const wanted = !published || now() - published.at > o.ttlSeconds * 1000 || unknownKid;
      if (wanted && (inflight !== undefined || now() - lastAttempt >= gapMs)) await refresh();
      if (!published && fixed.length === 0) {
        return { ok: false, unavailable: `the identity provider's keys could not be fetched (${lastError || "no answer yet"})` };
      }
      return { ok: true, keys: [...fixed, ...(published?.keys ?? [])] };
    },
  };
}

async function fetchKeys(fetchFn: typeof fetch, url: string): Promise<JwkKey[] | string> {
  try {
    const res = await fetchFn(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (res.status !== 200) {
      await res.body?.cancel();
      return `the JWKS endpoint answered HTTP ${res.status}`;
    }
    const text = await res.text();
    if (text.length > MAX_JWKS_BYTES) return `the JWKS is over ${MAX_JWKS_BYTES} bytes`;
    return parsePublishedKeys(text);
  } catch (e) {
    return `fetching the JWKS failed: ${(e as Error).name === "TimeoutError" ? "timed out" : "no connection"}`;
  }
}
