/**
 * Verifies OIDC-style bearer JWTs (RS256, ES256) against a configured JWKS, in workerd with
 * WebCrypto only. parseJwtSettings reads the AUTH_JWT_* env values; createJwtVerifier checks the
 * signature first, then iss/aud/exp/nbf/iat, then maps claims to a tenant, principal and roles.
 * Failure reasons name claims, never their values or the token. Test: test/node/auth/jwt.test.ts.
 */

export type JwkKey = JsonWebKey & { kid?: string; alg?: string };
export interface JwtSettings {
  issuer: string;
  audience: string;
  keys: JwkKey[];
  tenantClaim: string;
  principalClaim: string;
  rolesClaim: string;
  skewSeconds: number;
}
export interface JwtIdentity { tenant: string; principal: string; issuer: string; subject: string; roles: string[] }
export type JwtOutcome = { ok: true; identity: JwtIdentity } | { ok: false; reason: string };
export interface JwtEnv {
  AUTH_JWT_ISSUER?: string;
  AUTH_JWT_AUDIENCE?: string;
  AUTH_JWT_JWKS?: string;
  AUTH_JWT_TENANT_CLAIM?: string;
  AUTH_JWT_PRINCIPAL_CLAIM?: string;
  AUTH_JWT_ROLES_CLAIM?: string;
  AUTH_JWT_SKEW_SECONDS?: string;
}

type Alg = "RS256" | "ES256";
type Json = Record<string, unknown>;
interface TrustedKey { kid: string | undefined; alg: Alg; key: CryptoKey | undefined }

// Far above any real IdP token; bounds the base64/JSON/crypto work an unauthenticated caller can cause.
const MAX_TOKEN_CHARS = 8 * 1024;
const TENANT_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const MAX_PRINCIPAL_CHARS = 256;
const MAX_SKEW_SECONDS = 3600;
const ALGS = {
  RS256: { members: ["n", "e"], params: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } },
  ES256: { members: ["x", "y"], params: { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } },
} as const;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isAlg = (v: unknown): v is Alg => v === "RS256" || v === "ES256";
const fail = (reason: string): JwtOutcome => ({ ok: false, reason });

/** The algorithm a public JWK may verify, or undefined if it is not one we accept. */
function algOfKey(k: { kty?: unknown; crv?: unknown; alg?: unknown }): Alg | undefined {
  if (k.kty === "RSA" && (k.alg === undefined || k.alg === "RS256")) return "RS256";
  if (k.kty === "EC" && k.crv === "P-256" && (k.alg === undefined || k.alg === "ES256")) return "ES256";
  return undefined;
}

/** What is wrong with the i-th configured key, if anything. */
function keyProblem(k: unknown, i: number): string | undefined {
  const where = `AUTH_JWT_JWKS key ${i}`;
  if (!isObject(k)) return `${where} is not a JSON object`;
  if ("d" in k) return `${where} contains private key material ("d"); publish only the public key`;
  const alg = algOfKey(k);
  if (!alg) return `${where} must be an RSA key for RS256 or an EC P-256 key for ES256 (no "oct"/HS*/"none")`;
  const missing = ALGS[alg].members.find((m) => typeof k[m] !== "string");
  if (missing) return `${where} is missing "${missing}"`;
  if (k.kid !== undefined && typeof k.kid !== "string") return `${where} has a non-string "kid"`;
  return undefined;
}

function parseKeys(raw: string | undefined): JwkKey[] | string {
  if (!raw?.trim()) return "AUTH_JWT_JWKS is not set: set it to the IdP's JWKS JSON ({\"keys\":[...]})";
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch {
    return "AUTH_JWT_JWKS is not valid JSON";
  }
  const keys = isObject(doc) ? doc.keys : doc;
  if (!Array.isArray(keys) || keys.length === 0) return "AUTH_JWT_JWKS must be {\"keys\":[...]} or an array with at least one key";
  for (const [i, k] of keys.entries()) {
    const problem = keyProblem(k, i);
    if (problem) return problem;
  }
  return keys as JwkKey[];
}

function claimNames(env: JwtEnv): Pick<JwtSettings, "tenantClaim" | "principalClaim" | "rolesClaim"> | string {
  const names = {
    tenantClaim: env.AUTH_JWT_TENANT_CLAIM?.trim() || "tenant",
    principalClaim: env.AUTH_JWT_PRINCIPAL_CLAIM?.trim() || "sub",
    rolesClaim: env.AUTH_JWT_ROLES_CLAIM?.trim() || "roles",
  };
  const bad = Object.values(names).find((n) => n.split(".").includes(""));
  return bad === undefined ? names : `claim name ${JSON.stringify(bad)} has an empty path segment`;
}

/** Parses AUTH_JWT_* env values into settings; returns a string error describing what to fix. */
export function parseJwtSettings(env: JwtEnv): JwtSettings | string {
  const issuer = env.AUTH_JWT_ISSUER?.trim();
  if (!issuer) return "AUTH_JWT_ISSUER is not set: set it to the exact `iss` your IdP issues";
  const audience = env.AUTH_JWT_AUDIENCE?.trim();
  if (!audience) return "AUTH_JWT_AUDIENCE is not set: set it to the `aud` tokens for this API carry";
  const keys = parseKeys(env.AUTH_JWT_JWKS);
  if (typeof keys === "string") return keys;
  const skewRaw = env.AUTH_JWT_SKEW_SECONDS?.trim() || "60";
  const skewSeconds = Number(skewRaw);
  if (!/^\d+$/.test(skewRaw) || skewSeconds > MAX_SKEW_SECONDS) {
    return `AUTH_JWT_SKEW_SECONDS must be a whole number of seconds from 0 to ${MAX_SKEW_SECONDS}`;
  }
  const claims = claimNames(env);
  if (typeof claims === "string") return claims;
  return { issuer, audience, keys, ...claims, skewSeconds };
}

function bytesFromBase64Url(s: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) return undefined;
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function jsonFromSegment(s: string): Json | undefined {
  const bytes = bytesFromBase64Url(s);
  if (!bytes) return undefined;
  try {
    const v: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

async function importTrusted(k: JwkKey): Promise<TrustedKey | undefined> {
  const alg = algOfKey(k);
  if (!alg) return undefined;
  // Only the public members go to importKey, so a stray `key_ops`, `use` or `ext` cannot make import fail.
  const jwk: JsonWebKey = alg === "RS256" ? { kty: "RSA", n: k.n, e: k.e } : { kty: "EC", crv: "P-256", x: k.x, y: k.y };
  // A key with bad material (say, a truncated modulus) stays listed but unusable, so its kid is still recognised.
  const key = await crypto.subtle.importKey("jwk", jwk, ALGS[alg].params, false, ["verify"]).catch(() => undefined);
  return { kid: k.kid, alg, key };
}

// Keyed on the settings object so every verifier built from one parse shares the imported keys.
const keyCache = new WeakMap<JwtSettings, Promise<TrustedKey[]>>();
function trustedKeys(settings: JwtSettings): Promise<TrustedKey[]> {
  let keys = keyCache.get(settings);
  if (!keys) {
    keys = Promise.all(settings.keys.map(importTrusted)).then((ks) => ks.filter((k) => k !== undefined));
    keyCache.set(settings, keys);
  }
  return keys;
}

/** The keys to try for this header, or a reason none apply. */
function candidates(keys: TrustedKey[], alg: Alg, kid: unknown): TrustedKey[] | string {
  if (kid !== undefined && typeof kid !== "string") return "header kid is not a string";
  const named = kid === undefined ? keys : keys.filter((k) => k.kid === kid);
  if (named.length === 0) return `no key with kid ${JSON.stringify(String(kid).slice(0, 64))}`;
  const usable = named.filter((k) => k.alg === alg);
  if (usable.length === 0) return kid === undefined ? `no key for alg ${alg}` : `alg ${alg} does not match key ${JSON.stringify(kid.slice(0, 64))}`;
  return usable;
}

/** A claim by exact name (URL-style names contain dots), else by dotted path such as "org.id". */
function claimAt(payload: Json, name: string): unknown {
  if (name in payload) return payload[name];
  let v: unknown = payload;
  for (const part of name.split(".")) v = isObject(v) ? v[part] : undefined;
  return v;
}

function rolesFrom(v: unknown): string[] | undefined {
  if (v === undefined) return [];
  if (typeof v === "string") return v.split(" ").filter((r) => r !== "");
  if (Array.isArray(v) && v.every((r) => typeof r === "string")) return v as string[];
  return undefined;
}

function checkTimes(p: Json, now: number, skew: number): string | undefined {
  const isTime = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
  if (!isTime(p.exp)) return "claim \"exp\" missing or not a number";
  if (now > p.exp + skew) return "token expired";
  if (p.nbf !== undefined && (!isTime(p.nbf) || now + skew < p.nbf)) return "token not yet valid (nbf)";
  if (p.iat !== undefined && (!isTime(p.iat) || p.iat > now + skew)) return "claim \"iat\" is in the future";
  return undefined;
}

function identityFrom(p: Json, s: JwtSettings, now: number): JwtIdentity | string {
  if (p.iss !== s.issuer) return "issuer does not match";
  const aud = p.aud;
  if (!(aud === s.audience || (Array.isArray(aud) && aud.includes(s.audience)))) return "audience does not match";
  const timeProblem = checkTimes(p, now, s.skewSeconds);
  if (timeProblem) return timeProblem;
  const tenant = claimAt(p, s.tenantClaim);
  if (typeof tenant !== "string" || !TENANT_RE.test(tenant)) return `claim ${JSON.stringify(s.tenantClaim)} missing or not a valid tenant id`;
  const principal = claimAt(p, s.principalClaim);
  if (typeof principal !== "string" || principal === "" || principal.length > MAX_PRINCIPAL_CHARS) {
    return `claim ${JSON.stringify(s.principalClaim)} missing or not a string of 1-${MAX_PRINCIPAL_CHARS} chars`;
  }
  if (typeof p.sub !== "string") return "claim \"sub\" missing or not a string";
  const roles = rolesFrom(claimAt(p, s.rolesClaim));
  if (!roles) return `claim ${JSON.stringify(s.rolesClaim)} is not an array of strings or a space-separated string`;
  return { tenant, principal, issuer: s.issuer, subject: p.sub, roles };
}

async function verifyToken(settings: JwtSettings, token: string, now: number): Promise<JwtOutcome> {
  if (token.length > MAX_TOKEN_CHARS) return fail(`token longer than ${MAX_TOKEN_CHARS} chars`);
  const parts = token.split(".");
  if (parts.length !== 3) return fail("token is not three base64url segments");
  const [h, p, sig] = parts as [string, string, string];
  const header = jsonFromSegment(h);
  if (!header) return fail("header is not a base64url JSON object");
  const payload = jsonFromSegment(p);
  if (!payload) return fail("payload is not a base64url JSON object");
  const signature = bytesFromBase64Url(sig);
  if (!signature) return fail("signature is not base64url");
  if (!isAlg(header.alg)) return fail("header alg must be RS256 or ES256");
  // RFC 7515 §4.1.11: a recipient must reject critical extensions it does not understand; we know none.
  if (header.crit !== undefined) return fail("header crit is not supported");
  // WebCrypto ECDSA takes the raw r||s form the JWS uses (RFC 7518 §3.4), 32 bytes each for P-256.
  if (header.alg === "ES256" && signature.length !== 64) return fail("ES256 signature must be 64 bytes");
  const keys = candidates(await trustedKeys(settings), header.alg, header.kid);
  if (typeof keys === "string") return fail(keys);
  const signed = new TextEncoder().encode(`${h}.${p}`);
  const params = ALGS[header.alg].params;
  for (const { key } of keys) {
    // Some runtimes throw rather than return false on a malformed signature (e.g. wrong RSA length).
    const valid = key ? await crypto.subtle.verify(params, key, signature, signed).catch(() => false) : false;
    if (valid) {
      const identity = identityFrom(payload, settings, now);
      return typeof identity === "string" ? fail(identity) : { ok: true, identity };
    }
  }
  return fail("signature does not verify");
}

/** A verifier that imports keys once (cached per settings object) and verifies tokens. */
export function createJwtVerifier(settings: JwtSettings): { verify(token: string, nowSeconds: number): Promise<JwtOutcome> } {
  return { verify: (token, nowSeconds) => verifyToken(settings, token, nowSeconds) };
}
