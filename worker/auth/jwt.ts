/**
 * Verifies OIDC-style bearer JWTs (RS256, ES256) against a configured or published JWKS (jwks.ts).
 * parseJwtSettings reads the AUTH_JWT_* env values; createJwtVerifier checks the signature with
 * jose (base64url, JWS, WebCrypto; it runs in workerd), then iss/aud/exp/nbf/iat, then maps
 * claims to a tenant, principal and roles. The checks before jose runs only turn malformed tokens
 * into reasons a person can act on. Failure reasons name claims, never their values or the token.
 * Test: test/node/auth/jwt.test.ts.
 */
import { base64url, compactVerify } from "jose";
import type { ConfigEnv } from "../../objects/config.js";
import { createKeySet, jwksUrlProblem, parseStaticKeys, REFETCH_GAP_SECONDS, type Alg, type JwkKey, type KeySet, type TrustedKey } from "./jwks.js";

export type { JwkKey } from "./jwks.js";
export interface JwtSettings {
  issuer: string;
  audience: string;
  /** AUTH_JWT_JWKS, possibly empty when jwksUrl is set. */
  keys: JwkKey[];
  jwksUrl?: string;
  jwksTtlSeconds: number;
  jwksRefetchSeconds: number;
  tenantClaim: string;
  principalClaim: string;
  rolesClaim: string;
  skewSeconds: number;
}
export interface JwtIdentity {
  tenant: string;
  principal: string;
  issuer: string;
  subject: string;
  roles: string[];
}
/** `unavailable`: the keys could not be had, so the token was not judged (not the caller's fault). */
export type JwtOutcome = { ok: true; identity: JwtIdentity } | { ok: false; reason: string; unavailable?: true };
/** The AUTH_JWT_* variables (documented in objects/config.ts). */
export type JwtEnv = Pick<ConfigEnv, Extract<keyof ConfigEnv, `AUTH_JWT_${string}`>>;

type Json = Record<string, unknown>;

// Far above any real IdP token; bounds the base64/JSON/crypto work an unauthenticated caller can cause.
const MAX_TOKEN_CHARS = 8 * 1024;
const TENANT_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const MAX_PRINCIPAL_CHARS = 256;
const MAX_SKEW_SECONDS = 3600;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isAlg = (v: unknown): v is Alg => v === "RS256" || v === "ES256";
const fail = (reason: string): JwtOutcome => ({ ok: false, reason });

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
  const rawKeys = env.AUTH_JWT_JWKS?.trim();
  const jwksUrl = env.AUTH_JWT_JWKS_URL?.trim() || undefined;
  if (!rawKeys && !jwksUrl) return "neither AUTH_JWT_JWKS nor AUTH_JWT_JWKS_URL is set: set one to the IdP's keys (JSON) or its jwks_uri";
  const keys = rawKeys ? parseStaticKeys(rawKeys) : [];
  if (typeof keys === "string") return keys;
  const urlProblem = jwksUrl && jwksUrlProblem(jwksUrl);
  if (urlProblem) return urlProblem;
  const ttlRaw = env.AUTH_JWT_JWKS_TTL_SECONDS?.trim() || "600";
  if (!/^\d+$/.test(ttlRaw) || Number(ttlRaw) < 60 || Number(ttlRaw) > 86_400)
    return "AUTH_JWT_JWKS_TTL_SECONDS must be a whole number of seconds from 60 to 86400";
  const refetchRaw = env.AUTH_JWT_JWKS_REFETCH_SECONDS?.trim() || String(REFETCH_GAP_SECONDS);
  if (!/^\d+$/.test(refetchRaw) || Number(refetchRaw) < 1 || Number(refetchRaw) > 3600)
    return "AUTH_JWT_JWKS_REFETCH_SECONDS must be a whole number of seconds from 1 to 3600";
  const skewRaw = env.AUTH_JWT_SKEW_SECONDS?.trim() || "60";
  const skewSeconds = Number(skewRaw);
  if (!/^\d+$/.test(skewRaw) || skewSeconds > MAX_SKEW_SECONDS) {
    return `AUTH_JWT_SKEW_SECONDS must be a whole number of seconds from 0 to ${MAX_SKEW_SECONDS}`;
  }
  const claims = claimNames(env);
  if (typeof claims === "string") return claims;
  return { issuer, audience, keys, jwksUrl, jwksTtlSeconds: Number(ttlRaw), jwksRefetchSeconds: Number(refetchRaw), ...claims, skewSeconds };
}

/** A segment in the strict base64url alphabet (RFC 7515 §2: no padding, no "+" or "/"), decoded by jose. */
function bytesFromBase64Url(s: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) return undefined;
  try {
    return base64url.decode(s);
  } catch {
    return undefined;
  }
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
  if (!isTime(p.exp)) return 'claim "exp" missing or not a number';
  if (now > p.exp + skew) return "token expired";
  if (p.nbf !== undefined && (!isTime(p.nbf) || now + skew < p.nbf)) return "token not yet valid (nbf)";
  if (p.iat !== undefined && (!isTime(p.iat) || p.iat > now + skew)) return 'claim "iat" is in the future';
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
  if (typeof p.sub !== "string") return 'claim "sub" missing or not a string';
  const roles = rolesFrom(claimAt(p, s.rolesClaim));
  if (!roles) return `claim ${JSON.stringify(s.rolesClaim)} is not an array of strings or a space-separated string`;
  return { tenant, principal, issuer: s.issuer, subject: p.sub, roles };
}

async function verifyToken(settings: JwtSettings, keySet: KeySet, token: string, now: number): Promise<JwtOutcome> {
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
  const trusted = await keySet.keys(typeof header.kid === "string" ? header.kid : undefined);
  if (!trusted.ok) return { ok: false, reason: trusted.unavailable, unavailable: true };
  const keys = candidates(trusted.keys, header.alg, header.kid);
  if (typeof keys === "string") return fail(keys);
  for (const { key } of keys) {
    if (!key) continue;
    // jose refuses any algorithm but the key's; a malformed signature is "does not verify", not a throw to the caller.
    const verified = await compactVerify(token, key, { algorithms: [header.alg] }).then(
      () => true,
      () => false,
    );
    if (verified) {
      const identity = identityFrom(payload, settings, now);
      return typeof identity === "string" ? fail(identity) : { ok: true, identity };
    }
  }
  return fail("signature does not verify");
}

export interface JwtVerifier {
  verify(token: string, nowSeconds: number): Promise<JwtOutcome>;
}

/** A verifier that imports the static keys once and keeps the published set fresh (jwks.ts). */
export function createJwtVerifier(settings: JwtSettings, io: { fetch?: typeof fetch; nowMs?: () => number } = {}): JwtVerifier {
  const keySet = createKeySet({
    staticKeys: settings.keys,
    url: settings.jwksUrl,
    ttlSeconds: settings.jwksTtlSeconds,
    refetchGapSeconds: settings.jwksRefetchSeconds,
    ...io,
  });
  return { verify: (token, nowSeconds) => verifyToken(settings, keySet, token, nowSeconds) };
}
