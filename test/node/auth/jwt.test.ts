/**
 * worker/auth/jwt.ts against real keys: RSA 2048 and EC P-256 pairs made with Node's WebCrypto,
 * tokens signed here by a small JWS helper, verified by the module's WebCrypto-only code.
 */
import { webcrypto } from "node:crypto";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { b64u, ecPair, rsaPair, seg, sign, type KeyPair } from "../support/jwt-signer.js";
import { createJwtVerifier, parseJwtSettings, type JwkKey, type JwtEnv, type JwtSettings } from "../../../worker/auth/jwt.js";

type Pair = KeyPair;
const { subtle } = webcrypto;

const ISSUER = "https://idp.example.com/";
const AUDIENCE = "agentsessions";
const NOW = 1_800_000_000;
const claims = (over: Record<string, unknown> = {}) => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: "user-1",
  tenant: "acme",
  roles: ["admin"],
  iat: NOW - 10,
  exp: NOW + 300,
  ...over,
});

function settingsOf(keys: JwkKey[], env: Partial<JwtEnv> = {}): JwtSettings {
  const s = parseJwtSettings({ AUTH_JWT_ISSUER: ISSUER, AUTH_JWT_AUDIENCE: AUDIENCE, AUTH_JWT_JWKS: JSON.stringify({ keys }), ...env });
  if (typeof s === "string") throw new Error(s);
  return s;
}

let rsa: Pair, ec: Pair, otherRsa: Pair, jwks: JwkKey[];
let verify: (token: string, now?: number) => ReturnType<ReturnType<typeof createJwtVerifier>["verify"]>;
const rs = (payload: unknown, header: Record<string, unknown> = {}) => sign(rsa.privateKey, { alg: "RS256", kid: "rsa-1", ...header }, payload);
const es = (payload: unknown, header: Record<string, unknown> = {}) => sign(ec.privateKey, { alg: "ES256", kid: "ec-1", ...header }, payload);
const reason = async (token: string, now = NOW) => {
  const out = await verify(token, now);
  return out.ok ? "accepted" : out.reason;
};

beforeAll(async () => {
  [rsa, ec, otherRsa] = await Promise.all([rsaPair(), ecPair(), rsaPair()]);
  jwks = [
    { ...rsa.publicJwk, kid: "rsa-1", alg: "RS256", use: "sig" },
    { ...ec.publicJwk, kid: "ec-1" },
  ];
  const verifier = createJwtVerifier(settingsOf(jwks));
  verify = (token, now = NOW) => verifier.verify(token, now);
});

describe("verify: accepted tokens", () => {
  it("verify: valid RS256 token yields tenant, principal, issuer, subject and roles", async () => {
    expect(await verify(await rs(claims()))).toEqual({
      ok: true,
      identity: { tenant: "acme", principal: "user-1", issuer: ISSUER, subject: "user-1", roles: ["admin"] },
    });
  });

  it("verify: valid ES256 token is accepted", async () => {
    const out = await verify(await es(claims({ sub: "svc-7", tenant: "beta.co", roles: [] })));
    expect(out).toEqual({ ok: true, identity: { tenant: "beta.co", principal: "svc-7", issuer: ISSUER, subject: "svc-7", roles: [] } });
  });

  it("verify: without kid, each key of the header's type is tried", async () => {
    const verifier = createJwtVerifier(settingsOf([otherRsa.publicJwk, rsa.publicJwk, ec.publicJwk]));
    const out = await verifier.verify(await sign(rsa.privateKey, { alg: "RS256" }, claims()), NOW);
    expect(out.ok).toBe(true);
  });

  it("verify: audience array containing the audience is accepted, one without it is not", async () => {
    expect(await reason(await rs(claims({ aud: ["other", AUDIENCE] })))).toBe("accepted");
    expect(await reason(await rs(claims({ aud: ["other", "more"] })))).toBe("audience does not match");
  });

  it("verify: principal claim can differ from sub", async () => {
    const verifier = createJwtVerifier(settingsOf(jwks, { AUTH_JWT_PRINCIPAL_CLAIM: "email" }));
    const out = await verifier.verify(await rs(claims({ email: "ann@example.com" })), NOW);
    expect(out.ok && out.identity).toMatchObject({ principal: "ann@example.com", subject: "user-1" });
    expect(await verifier.verify(await rs(claims()), NOW)).toEqual({ ok: false, reason: 'claim "email" missing or not a string of 1-256 chars' });
  });

  it("verify: keys are imported once per verifier (the Worker keeps one per isolate)", async () => {
    const spy = vi.spyOn(globalThis.crypto.subtle, "importKey");
    try {
      const verifier = createJwtVerifier(settingsOf(jwks));
      const token = await rs(claims());
      for (let i = 0; i < 3; i++) expect((await verifier.verify(token, NOW)).ok).toBe(true);
      expect(spy).toHaveBeenCalledTimes(jwks.length);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("verify: signature and header", () => {
  it("verify: token signed by another key with the same kid fails the signature", async () => {
    expect(await reason(await sign(otherRsa.privateKey, { alg: "RS256", kid: "rsa-1" }, claims()))).toBe("signature does not verify");
  });

  it("verify: tampered payload fails the signature", async () => {
    const [h, , s] = (await rs(claims())).split(".");
    expect(await reason(`${h}.${seg(claims({ tenant: "evil" }))}.${s}`)).toBe("signature does not verify");
  });

  it("verify: alg none is refused", async () => {
    expect(await reason(`${seg({ alg: "none" })}.${seg(claims())}.`)).toBe("header alg must be RS256 or ES256");
  });

  it("verify: HS256 keyed with the RSA public modulus is refused", async () => {
    const input = `${seg({ alg: "HS256", kid: "rsa-1" })}.${seg(claims())}`;
    const hmac = await subtle.importKey("raw", Buffer.from(rsa.publicJwk.n!), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const token = `${input}.${b64u(await subtle.sign("HMAC", hmac, Buffer.from(input)))}`;
    expect(await reason(token)).toBe("header alg must be RS256 or ES256");
  });

  it("verify: alg that does not match the kid's key type is refused", async () => {
    expect(await reason(await es(claims(), { kid: "rsa-1" }))).toBe('alg ES256 does not match key "rsa-1"');
    expect(await reason(await rs(claims(), { kid: "ec-1" }))).toBe('alg RS256 does not match key "ec-1"');
  });

  it("verify: no key of the header's type without kid is refused", async () => {
    const verifier = createJwtVerifier(settingsOf([rsa.publicJwk]));
    expect(await verifier.verify(await sign(ec.privateKey, { alg: "ES256" }, claims()), NOW)).toEqual({ ok: false, reason: "no key for alg ES256" });
  });

  it("verify: unknown kid is refused, naming the kid", async () => {
    expect(await reason(await rs(claims(), { kid: "rotated-away" }))).toBe('no key with kid "rotated-away"');
  });

  it("verify: ES256 signature of the wrong length is refused", async () => {
    const [h, p, s] = (await es(claims())).split(".");
    const sig = Buffer.from(s!, "base64url");
    expect(sig.length).toBe(64);
    expect(await reason(`${h}.${p}.${b64u(Buffer.concat([Buffer.from([0x30, 0x44]), sig]))}`)).toBe("ES256 signature must be 64 bytes");
    expect(await reason(`${h}.${p}.${b64u(sig.subarray(0, 63))}`)).toBe("ES256 signature must be 64 bytes");
  });

  it("verify: a critical header extension is refused", async () => {
    expect(await reason(await rs(claims(), { crit: ["b64"], b64: false }))).toBe("header crit is not supported");
  });
});

describe("verify: token shape", () => {
  it("verify: two or four segments are refused", async () => {
    const [h, p, s] = (await rs(claims())).split(".");
    expect(await reason(`${h}.${p}`)).toBe("token is not three base64url segments");
    expect(await reason(`${h}.${p}.${s}.${s}`)).toBe("token is not three base64url segments");
  });

  it("verify: bad base64url in any segment is refused", async () => {
    const [h, p, s] = (await rs(claims())).split(".");
    expect(await reason(`${h}$.${p}.${s}`)).toBe("header is not a base64url JSON object");
    expect(await reason(`${h}.${p}+/.${s}`)).toBe("payload is not a base64url JSON object");
    expect(await reason(`${h}.${p}.${s}*`)).toBe("signature is not base64url");
    expect(await reason(`${h}.${p}.A`)).toBe("signature is not base64url");
  });

  it("verify: non-JSON or non-object segments are refused", async () => {
    const [h, , s] = (await rs(claims())).split(".");
    expect(await reason(`${seg("not json")}.${seg(claims())}.${s}`)).toBe("header is not a base64url JSON object");
    expect(await reason(`${h}.${seg("hello")}.${s}`)).toBe("payload is not a base64url JSON object");
    expect(await reason(`${h}.${seg([1, 2])}.${s}`)).toBe("payload is not a base64url JSON object");
  });

  it("verify: a validly signed token over 8 KiB is refused", async () => {
    const big = await rs(claims({ pad: "x".repeat(6000) }));
    expect(big.length).toBeGreaterThan(8192);
    expect(await reason(big)).toBe("token longer than 8192 chars");
    expect(await reason(await rs(claims({ pad: "x".repeat(5000) })))).toBe("accepted");
  });
});

describe("verify: registered claims", () => {
  it("verify: wrong issuer is refused", async () => {
    expect(await reason(await rs(claims({ iss: "https://evil.example.com/" })))).toBe("issuer does not match");
  });

  it("verify: wrong or missing audience is refused", async () => {
    expect(await reason(await rs(claims({ aud: "someone-else" })))).toBe("audience does not match");
    expect(await reason(await rs(claims({ aud: undefined })))).toBe("audience does not match");
  });

  it("verify: expired beyond skew is refused, within skew accepted", async () => {
    const token = await rs(claims({ iat: NOW - 1000, exp: NOW - 30 }));
    expect(await reason(token, NOW)).toBe("accepted");
    expect(await reason(token, NOW + 30)).toBe("accepted");
    expect(await reason(token, NOW + 31)).toBe("token expired");
  });

  it("verify: missing or non-numeric exp is refused", async () => {
    expect(await reason(await rs(claims({ exp: undefined })))).toBe('claim "exp" missing or not a number');
    expect(await reason(await rs(claims({ exp: String(NOW + 300) })))).toBe('claim "exp" missing or not a number');
  });

  it("verify: nbf in the future beyond skew is refused, within skew accepted", async () => {
    expect(await reason(await rs(claims({ nbf: NOW + 61 })))).toBe("token not yet valid (nbf)");
    expect(await reason(await rs(claims({ nbf: NOW + 60 })))).toBe("accepted");
  });

  it("verify: iat in the future beyond skew is refused", async () => {
    expect(await reason(await rs(claims({ iat: NOW + 120 })))).toBe('claim "iat" is in the future');
  });
});

describe("verify: identity claims", () => {
  it("verify: missing or invalid tenant is refused without echoing the value", async () => {
    const want = 'claim "tenant" missing or not a valid tenant id';
    expect(await reason(await rs(claims({ tenant: undefined })))).toBe(want);
    expect(await reason(await rs(claims({ tenant: "Evil Tenant!" })))).toBe(want);
    expect(await reason(await rs(claims({ tenant: 42 })))).toBe(want);
    expect(await reason(await rs(claims({ tenant: "a".repeat(64) })))).toBe(want);
  });

  it("verify: dotted tenant claim reads a nested value, or an exact URL-style claim name", async () => {
    const nested = createJwtVerifier(settingsOf(jwks, { AUTH_JWT_TENANT_CLAIM: "org.id" }));
    const out = await nested.verify(await rs(claims({ tenant: undefined, org: { id: "acme-eu" } })), NOW);
    expect(out.ok && out.identity.tenant).toBe("acme-eu");
    expect(await nested.verify(await rs(claims({ org: "acme" })), NOW)).toEqual({ ok: false, reason: 'claim "org.id" missing or not a valid tenant id' });
    const url = createJwtVerifier(settingsOf(jwks, { AUTH_JWT_TENANT_CLAIM: "https://acme.example/tenant" }));
    const byUrl = await url.verify(await rs(claims({ "https://acme.example/tenant": "acme" })), NOW);
    expect(byUrl.ok && byUrl.identity.tenant).toBe("acme");
  });

  it("verify: roles as an array or a space-separated string; missing roles is empty", async () => {
    const roles = async (v: unknown) => {
      const out = await verify(await rs(claims({ roles: v })));
      return out.ok ? out.identity.roles : out.reason;
    };
    expect(await roles(["admin", "weird-role"])).toEqual(["admin", "weird-role"]);
    expect(await roles("reader  writer admin")).toEqual(["reader", "writer", "admin"]);
    expect(await roles(undefined)).toEqual([]);
    expect(await roles([1, "admin"])).toBe('claim "roles" is not an array of strings or a space-separated string');
  });

  it("verify: sub must be a string", async () => {
    const verifier = createJwtVerifier(settingsOf(jwks, { AUTH_JWT_PRINCIPAL_CLAIM: "email" }));
    expect(await verifier.verify(await rs(claims({ sub: 7, email: "a@b.c" })), NOW)).toEqual({ ok: false, reason: 'claim "sub" missing or not a string' });
  });
});

describe("parseJwtSettings", () => {
  const env = (over: Partial<JwtEnv> = {}): JwtEnv => ({
    AUTH_JWT_ISSUER: ISSUER,
    AUTH_JWT_AUDIENCE: AUDIENCE,
    AUTH_JWT_JWKS: JSON.stringify({ keys: jwks }),
    ...over,
  });

  it("parseJwtSettings: fills defaults and accepts a bare JWK array", () => {
    expect(parseJwtSettings(env({ AUTH_JWT_JWKS: JSON.stringify(jwks) }))).toEqual({
      issuer: ISSUER,
      audience: AUDIENCE,
      keys: jwks,
      jwksUrl: undefined,
      jwksTtlSeconds: 600,
      jwksRefetchSeconds: 30,
      tenantClaim: "tenant",
      principalClaim: "sub",
      rolesClaim: "roles",
      skewSeconds: 60,
    });
    expect(parseJwtSettings(env({ AUTH_JWT_SKEW_SECONDS: "5" }))).toMatchObject({ skewSeconds: 5 });
  });

  it("parseJwtSettings: missing issuer, audience or JWKS names the variable", () => {
    expect(parseJwtSettings(env({ AUTH_JWT_ISSUER: undefined }))).toMatch(/^AUTH_JWT_ISSUER is not set/);
    expect(parseJwtSettings(env({ AUTH_JWT_AUDIENCE: " " }))).toMatch(/^AUTH_JWT_AUDIENCE is not set/);
    expect(parseJwtSettings(env({ AUTH_JWT_JWKS: undefined }))).toMatch(/^neither AUTH_JWT_JWKS nor AUTH_JWT_JWKS_URL is set/);
  });

  it("parseJwtSettings: bad JSON or an empty key set is refused", () => {
    expect(parseJwtSettings(env({ AUTH_JWT_JWKS: "{keys:" }))).toBe("AUTH_JWT_JWKS is not valid JSON");
    expect(parseJwtSettings(env({ AUTH_JWT_JWKS: '{"keys":[]}' }))).toMatch(/at least one key/);
  });

  it("parseJwtSettings: symmetric, HS256, alg none and non-P-256 keys are refused", () => {
    const bad = (k: unknown) => parseJwtSettings(env({ AUTH_JWT_JWKS: JSON.stringify({ keys: [jwks[0], k] }) }));
    const want = /^AUTH_JWT_JWKS key 1 must be an RSA key for RS256 or an EC P-256 key for ES256/;
    expect(bad({ kty: "oct", k: "c2VjcmV0", alg: "HS256" })).toMatch(want);
    expect(bad({ ...rsa.publicJwk, alg: "HS256" })).toMatch(want);
    expect(bad({ ...rsa.publicJwk, alg: "none" })).toMatch(want);
    expect(bad({ ...ec.publicJwk, crv: "P-384" })).toMatch(want);
    expect(bad({ kty: "RSA", e: "AQAB" })).toBe('AUTH_JWT_JWKS key 1 is missing "n"');
  });

  it("parseJwtSettings: a key with private material is refused", async () => {
    const priv = await subtle.exportKey("jwk", rsa.privateKey);
    expect(priv.d).toBeTypeOf("string");
    expect(parseJwtSettings(env({ AUTH_JWT_JWKS: JSON.stringify([priv]) }))).toMatch(/^AUTH_JWT_JWKS key 0 contains private key material/);
  });

  it("parseJwtSettings: bad skew or claim path is refused", () => {
    expect(parseJwtSettings(env({ AUTH_JWT_SKEW_SECONDS: "-5" }))).toMatch(/^AUTH_JWT_SKEW_SECONDS must be a whole number/);
    expect(parseJwtSettings(env({ AUTH_JWT_SKEW_SECONDS: "1e3" }))).toMatch(/^AUTH_JWT_SKEW_SECONDS/);
    expect(parseJwtSettings(env({ AUTH_JWT_SKEW_SECONDS: "7200" }))).toMatch(/^AUTH_JWT_SKEW_SECONDS/);
    expect(parseJwtSettings(env({ AUTH_JWT_TENANT_CLAIM: "org..id" }))).toBe('claim name "org..id" has an empty path segment');
  });
});
