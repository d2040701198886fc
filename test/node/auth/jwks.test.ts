/**
 * worker/auth/jwks.ts: when a published key set is fetched, kept, refetched and given up on, with
 * an in-process fetch that counts calls and a clock the test moves; and a token signed by a
 * rotated key verifying once the set is refetched (real keys, WebCrypto).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createKeySet, jwksUrlProblem, parsePublishedKeys, REFETCH_GAP_SECONDS, type JwkKey } from "../../../worker/auth/jwks.js";

const REFETCH_GAP_MS = REFETCH_GAP_SECONDS * 1000;
import { createJwtVerifier, parseJwtSettings } from "../../../worker/auth/jwt.js";
import { ecPair, rsaPair, sign, type KeyPair } from "../support/jwt-signer.js";

const URL_ = "https://idp.example.com/.well-known/jwks.json";
let a: KeyPair, b: KeyPair;
const jwk = (p: KeyPair, kid: string): JwkKey => ({ ...p.publicJwk, kid });

beforeAll(async () => {
  [a, b] = await Promise.all([ecPair(), rsaPair()]);
});

/** A JWKS endpoint under the test's control: what it serves, and how many times it was asked. */
function idp(initial: JwkKey[]) {
  const state = { keys: initial, status: 200, down: false, calls: 0 };
  const fetchFn = (async () => {
    state.calls++;
    if (state.down) throw new TypeError("fetch failed");
    return new Response(JSON.stringify({ keys: state.keys }), { status: state.status });
  }) as unknown as typeof fetch;
  return { state, fetchFn };
}

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("a published key set", () => {
  it("is fetched when first needed, reused within its TTL, fetched again after it", async () => {
    const { state, fetchFn } = idp([jwk(a, "a")]);
    const c = clock();
    const set = createKeySet({ staticKeys: [], url: URL_, ttlSeconds: 600, fetch: fetchFn, nowMs: c.now });
    expect(state.calls).toBe(0);
    expect(await set.keys("a")).toMatchObject({ ok: true, keys: [{ kid: "a", alg: "ES256" }] });
    await set.keys("a");
    c.advance(599_000);
    await set.keys(undefined);
    expect(state.calls).toBe(1);
    c.advance(2_000);
    await set.keys("a");
    expect(state.calls).toBe(2);
  });

  it("an unknown kid (the provider rotated) refetches at once, but at most once per gap", async () => {
    const { state, fetchFn } = idp([jwk(a, "a")]);
    const c = clock();
    const set = createKeySet({ staticKeys: [], url: URL_, ttlSeconds: 600, fetch: fetchFn, nowMs: c.now });
    await set.keys("a");
    c.advance(REFETCH_GAP_MS);
    state.keys = [jwk(a, "a"), jwk(b, "b")];
    const after = await set.keys("b");
    expect(state.calls).toBe(2);
    expect(after.ok && after.keys.map((k) => k.kid)).toEqual(["a", "b"]);
    // A flood of made-up kids does not turn into a flood of fetches.
    for (let i = 0; i < 20; i++) await set.keys(`nope-${i}`);
    expect(state.calls).toBe(2);
    c.advance(REFETCH_GAP_MS);
    await set.keys("nope-again");
    expect(state.calls).toBe(3);
  });

  it("the refetch gap is the configured one", async () => {
    const { state, fetchFn } = idp([jwk(a, "a")]);
    const c = clock();
    const set = createKeySet({ staticKeys: [], url: URL_, ttlSeconds: 600, refetchGapSeconds: 5, fetch: fetchFn, nowMs: c.now });
    await set.keys("a");
    c.advance(4_999);
    await set.keys("nope-1");
    expect(state.calls).toBe(1);
    c.advance(1);
    await set.keys("nope-2");
    expect(state.calls).toBe(2);
  });

  it("concurrent first requests share one fetch", async () => {
    const { state, fetchFn } = idp([jwk(a, "a")]);
    const set = createKeySet({ staticKeys: [], url: URL_, ttlSeconds: 600, fetch: fetchFn, nowMs: clock().now });
    const all = await Promise.all(Array.from({ length: 10 }, () => set.keys("a")));
    expect(all.every((r) => r.ok)).toBe(true);
    expect(state.calls).toBe(1);
  });

  it("with no set yet, a failed fetch is unavailable (naming why), retried only after the gap", async () => {
    const { state, fetchFn } = idp([jwk(a, "a")]);
    const c = clock();
    const set = createKeySet({ staticKeys: [], url: URL_, ttlSeconds: 600, fetch: fetchFn, nowMs: c.now });
    state.status = 503;
    expect(await set.keys("a")).toEqual({ ok: false, unavailable: expect.stringContaining("HTTP 503") });
    state.status = 200;
    state.down = true;
    c.advance(REFETCH_GAP_MS);
    expect(await set.keys("a")).toEqual({ ok: false, unavailable: expect.stringContaining("no connection") });
    state.down = false;
    expect((await set.keys("a")).ok).toBe(false); // within the gap: not asked again
    expect(state.calls).toBe(2);
    c.advance(REFETCH_GAP_MS);
    expect((await set.keys("a")).ok).toBe(true);
  });

  it("once fetched, a failing provider leaves the last good set in use", async () => {
    const { state, fetchFn } = idp([jwk(a, "a")]);
    const c = clock();
    const set = createKeySet({ staticKeys: [], url: URL_, ttlSeconds: 60, fetch: fetchFn, nowMs: c.now });
    await set.keys("a");
    state.down = true;
    c.advance(61_000);
    expect(await set.keys("a")).toMatchObject({ ok: true, keys: [{ kid: "a" }] });
    expect(state.calls).toBe(2);
  });

  it("static keys are used with the published ones, and a kid they hold causes no fetch", async () => {
    const { state, fetchFn } = idp([jwk(b, "b")]);
    const set = createKeySet({ staticKeys: [jwk(a, "a")], url: URL_, ttlSeconds: 600, fetch: fetchFn, nowMs: clock().now });
    const first = await set.keys("b");
    expect(first.ok && first.keys.map((k) => k.kid)).toEqual(["a", "b"]);
    expect(state.calls).toBe(1);
  });

  it("skips encryption keys and algorithms we do not verify; a set with no signing key is an error", () => {
    const enc = { ...a.publicJwk, kid: "enc", use: "enc" };
    const hs = { kty: "oct", k: "c2VjcmV0", kid: "hs" };
    const ok = parsePublishedKeys(JSON.stringify({ keys: [enc, hs, jwk(a, "sig")] }));
    expect(Array.isArray(ok) && ok.map((k) => k.kid)).toEqual(["sig"]);
    expect(parsePublishedKeys(JSON.stringify({ keys: [enc, hs] }))).toBe("the JWKS has no RS256 or ES256 signing key");
    expect(parsePublishedKeys("<html>")).toBe("the JWKS is not valid JSON");
  });

  it("the URL must be https, or http on a loopback address", () => {
    expect(jwksUrlProblem(URL_)).toBeUndefined();
    expect(jwksUrlProblem("http://127.0.0.1:9999/jwks")).toBeUndefined();
    expect(jwksUrlProblem("http://idp.example.com/jwks")).toContain("must be https");
    expect(jwksUrlProblem("not a url")).toContain("not a URL");
  });
});

describe("JWT settings and verification with AUTH_JWT_JWKS_URL", () => {
  const env = { AUTH_JWT_ISSUER: "https://idp.example.com/", AUTH_JWT_AUDIENCE: "api" };

  it("needs a key source; the TTL and the refetch gap are bounded", () => {
    expect(parseJwtSettings(env)).toContain("neither AUTH_JWT_JWKS nor AUTH_JWT_JWKS_URL");
    expect(parseJwtSettings({ ...env, AUTH_JWT_JWKS_URL: URL_ })).toMatchObject({ keys: [], jwksUrl: URL_, jwksTtlSeconds: 600, jwksRefetchSeconds: 30 });
    expect(parseJwtSettings({ ...env, AUTH_JWT_JWKS_URL: URL_, AUTH_JWT_JWKS_TTL_SECONDS: "5" })).toContain("from 60 to 86400");
    expect(parseJwtSettings({ ...env, AUTH_JWT_JWKS_URL: URL_, AUTH_JWT_JWKS_REFETCH_SECONDS: "5" })).toMatchObject({ jwksRefetchSeconds: 5 });
    for (const bad of ["0", "3601", "1.5", "soon"]) {
      expect(parseJwtSettings({ ...env, AUTH_JWT_JWKS_URL: URL_, AUTH_JWT_JWKS_REFETCH_SECONDS: bad })).toContain("from 1 to 3600");
    }
    expect(parseJwtSettings({ ...env, AUTH_JWT_JWKS_URL: "http://idp.example.com/jwks" })).toContain("must be https");
  });

  it("a token signed with a key the provider rotated in verifies; unreachable keys are unavailable, not a bad token", async () => {
    const settings = parseJwtSettings({ ...env, AUTH_JWT_JWKS_URL: URL_ });
    if (typeof settings === "string") throw new Error(settings);
    const { state, fetchFn } = idp([jwk(a, "a")]);
    const c = clock();
    const verifier = createJwtVerifier(settings, { fetch: fetchFn, nowMs: c.now });
    const now = 1_800_000_000;
    const claims = { iss: env.AUTH_JWT_ISSUER, aud: "api", sub: "u", tenant: "acme", exp: now + 60 };
    expect(await verifier.verify(await sign(a.privateKey, { alg: "ES256", kid: "a" }, claims), now)).toMatchObject({ ok: true });
    state.keys = [jwk(b, "b")];
    c.advance(REFETCH_GAP_MS);
    expect(await verifier.verify(await sign(b.privateKey, { alg: "RS256", kid: "b" }, claims), now)).toMatchObject({ ok: true, identity: { tenant: "acme" } });

    const down = idp([]);
    down.state.down = true;
    const blind = createJwtVerifier(settings, { fetch: down.fetchFn, nowMs: c.now });
    expect(await blind.verify(await sign(a.privateKey, { alg: "ES256", kid: "a" }, claims), now)).toMatchObject({ ok: false, unavailable: true });
  });
});
