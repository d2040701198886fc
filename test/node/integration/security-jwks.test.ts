/**
 * AUTH_MODE=jwt with AUTH_JWT_JWKS_URL against a real `wrangler dev` and a real HTTP stand-in for
 * the identity provider's JWKS endpoint: the key set is fetched when first needed, a rotated-in key
 * is picked up by the refetch its unknown kid causes, and a flood of unknown kids does not become a
 * flood of fetches. (The refetch gap is set to 3 s, so this file waits once; the timing rules are
 * in test/node/auth/jwks.test.ts with a clock the test controls.)
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionsClient } from "../../../sdk/client.js";
import { sleep, startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import type { JwkKey } from "../../../worker/auth/jwks.js";
import { ecPair, rsaPair, sign, type KeyPair } from "../support/jwt-signer.js";

const ISSUER = "https://idp.test/";
const AUDIENCE = "agentsessions-jwks";
const GAP_S = 3;
let server: DevServer;
let idp: Server;
let first: KeyPair;
let rotated: KeyPair;
const published: { keys: JwkKey[]; fetches: number } = { keys: [], fetches: 0 };

beforeAll(async () => {
  [first, rotated] = await Promise.all([ecPair(), rsaPair()]);
  published.keys = [
    { ...first.publicJwk, kid: "k1", use: "sig" },
    { kty: "oct", k: "c2VjcmV0", kid: "hmac" },
  ];
  idp = createServer((req, res) => {
    if (req.url !== "/.well-known/jwks.json") return void res.writeHead(404).end();
    published.fetches++;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: published.keys }));
  });
  await new Promise<void>((ok) => idp.listen(0, "127.0.0.1", ok));
  server = await startDevServer({
    vars: {
      AUTH_MODE: "jwt",
      AUTH_JWT_ISSUER: ISSUER,
      AUTH_JWT_AUDIENCE: AUDIENCE,
      AUTH_JWT_JWKS_URL: `http://127.0.0.1:${(idp.address() as AddressInfo).port}/.well-known/jwks.json`,
      AUTH_JWT_JWKS_REFETCH_SECONDS: String(GAP_S),
      RATE_LIMIT_PER_SECOND: "0",
    },
  });
});

afterAll(async () => {
  await server?.dispose();
  await new Promise((ok) => idp?.close(ok));
});

const now = () => Math.floor(Date.now() / 1000);
async function clientFor(key: KeyPair, kid: string): Promise<SessionsClient> {
  const alg = key.publicJwk.kty === "EC" ? "ES256" : "RS256";
  const token = await sign(key.privateKey, { alg, kid }, { iss: ISSUER, aud: AUDIENCE, sub: "ops", tenant: "jwks-org", roles: "read write", exp: now() + 600 });
  return new SessionsClient({ server: server.url, token });
}
const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e) => ConnectError.from(e),
  );

describe("AUTH_JWT_JWKS_URL", () => {
  it("fetches the provider's keys when first needed, picks up a rotated key, and is not made to refetch per unknown kid", async () => {
    expect(published.fetches).toBe(0);
    const c = await clientFor(first, "k1");
    const uid = (await c.create()).metadata!.uid;
    expect((await c.exec({ session: uid, inputs: ["hi"] })).outputs).toEqual(["echo:hi"]);
    expect(published.fetches).toBe(1);

    // The provider rotates: the old key goes, a new one comes. Past the refetch gap, the new kid
    // makes the host fetch again, and the same tenant's session is there for the new token.
    published.keys = [{ ...rotated.publicJwk, kid: "k2" }];
    await sleep(GAP_S * 1000 + 500);
    const r = await clientFor(rotated, "k2");
    expect((await r.get(uid)).lastSeq).toBe(5n);
    expect(published.fetches).toBe(2);

    // Made-up kids are refused without a fetch each: at most one per gap (a slow machine may take
    // longer than one gap for the ten), never one per kid.
    const flood = Date.now();
    for (let i = 0; i < 10; i++) {
      const err = await errorOf((await clientFor(rotated, `made-up-${i}`)).get(uid));
      expect(err?.code).toBe(Code.Unauthenticated);
      expect(err?.rawMessage).toContain(`no key with kid "made-up-${i}"`);
    }
    expect(published.fetches).toBeLessThanOrEqual(2 + Math.ceil((Date.now() - flood) / (GAP_S * 1000)));
    expect(published.fetches).toBeLessThan(12);
  }, 90_000);
});
