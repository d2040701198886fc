/**
 * The hosted endpoint with AUTH_MODE=jwt, against a real `wrangler dev`: tokens from a stand-in
 * identity provider (keys made here, the public half configured as the JWKS) are the principal;
 * expired, wrongly signed or foreign-audience tokens are refused; per-tenant request rate and
 * concurrent executions are limited, each tenant on its own.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionsClient } from "../../../sdk/client.js";
import { startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";
import { ecPair, rsaPair, sign, type KeyPair } from "../support/jwt-signer.js";
import { waitFor } from "../support/wait.js";

const ISSUER = "https://idp.test/";
const AUDIENCE = "agentsessions-test";
let server: DevServer;
let gates: FakeOpenAi;
let idp: KeyPair;
let stranger: KeyPair;

beforeAll(async () => {
  [idp, stranger] = await Promise.all([ecPair(), rsaPair()]);
  gates = await startFakeOpenAi();
  server = await startDevServer({
    vars: {
      AUTH_MODE: "jwt",
      AUTH_JWT_ISSUER: ISSUER,
      AUTH_JWT_AUDIENCE: AUDIENCE,
      AUTH_JWT_JWKS: JSON.stringify({ keys: [{ ...idp.publicJwk, kid: "idp-1", alg: "ES256" }] }),
      AUTH_JWT_TENANT_CLAIM: "org",
      TEST_HARNESSES: "1",
      RATE_LIMIT_PER_SECOND: "1",
      RATE_LIMIT_BURST: "20",
      MAX_CONCURRENT_EXECS: "1",
    },
  });
});

afterAll(async () => {
  await server?.dispose();
  await gates?.close();
});

const now = () => Math.floor(Date.now() / 1000);
function token(claims: Record<string, unknown> = {}, key = idp, kid = "idp-1"): Promise<string> {
  return sign(
    key.privateKey,
    { alg: key.publicJwk.kty === "EC" ? "ES256" : "RS256", kid },
    {
      iss: ISSUER,
      aud: AUDIENCE,
      sub: "user-1",
      org: "org-a",
      roles: "read write",
      iat: now() - 5,
      exp: now() + 600,
      ...claims,
    },
  );
}
const client = async (claims: Record<string, unknown> = {}) => new SessionsClient({ server: server.url, token: await token(claims) });
const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e) => ConnectError.from(e),
  );

describe("AUTH_MODE=jwt", () => {
  it("a valid token is its principal and tenant; the session records the issuer and subject", async () => {
    const c = await client({ org: "org-id", sub: "alice" });
    const s = await c.create();
    expect(s.identity).toMatchObject({ principal: "alice", issuer: ISSUER, subject: "alice" });
    expect((await c.exec({ session: s.metadata!.uid, inputs: ["hi"] })).outputs).toEqual(["echo:hi"]);
    // Another org's token does not see it.
    const other = await client({ org: "org-other" });
    expect((await errorOf(other.get(s.metadata!.uid)))?.code).toBe(Code.NotFound);
  });

  it("expired, not yet valid, wrongly signed, wrong audience or tenantless tokens are UNAUTHENTICATED", async () => {
    const refused = [
      await token({ org: "org-id", exp: now() - 3600 }),
      await token({ org: "org-id", nbf: now() + 3600 }),
      await token({ org: "org-id" }, stranger, "idp-1"),
      await token({ org: "org-id", aud: "someone-else" }),
      await token({ org: undefined }),
    ];
    for (const [i, t] of refused.entries()) {
      const err = await errorOf(new SessionsClient({ server: server.url, token: t }).create());
      expect(err?.code, `token ${i}: ${err?.message}`).toBe(Code.Unauthenticated);
      expect(err?.rawMessage).toMatch(/JWT was refused/);
    }
  });

  it("roles come from the token: without write, writes are PERMISSION_DENIED", async () => {
    const reader = await client({ org: "org-ro", roles: ["read"] });
    expect((await errorOf(reader.create()))?.code).toBe(Code.PermissionDenied);
    expect((await errorOf(reader.get("sess-" + "1".repeat(24))))?.code).toBe(Code.NotFound);
  });
});

describe("per-tenant limits", () => {
  it("rate: past the burst a tenant's requests are RESOURCE_EXHAUSTED with a retry hint; another tenant is unaffected", async () => {
    const busy = await client({ org: "org-rate" });
    const errors: (ConnectError | undefined)[] = [];
    for (let i = 0; i < 40; i++) errors.push(await errorOf(busy.get("sess-" + "2".repeat(24))));
    const codes = errors.map((e) => e?.code ?? Code.Unknown);
    const limited = errors.filter((e) => e?.code === Code.ResourceExhausted);
    expect(limited.length).toBeGreaterThan(0);
    expect(codes.filter((c) => c !== Code.ResourceExhausted).every((c) => c === Code.NotFound)).toBe(true);
    // Every refusal carries the hint. (Checked on the refusals themselves: one more request after
    // the loop could land just after the bucket refilled a token, and then rightly pass.)
    for (const err of limited) expect(err?.rawMessage).toMatch(/rate limit of 1 requests per second: retry in \d+ s/);
    const quiet = await client({ org: "org-quiet" });
    expect((await errorOf(quiet.get("sess-" + "2".repeat(24))))?.code).toBe(Code.NotFound);
  });

  it("concurrency: a second execution while the tenant's only slot is busy is RESOURCE_EXHAUSTED; it runs once the first ends", async () => {
    const c = await client({ org: "org-conc" });
    const first = (await c.create({ harness: "hold" })).metadata!.uid;
    const second = (await c.create({ harness: "echo" })).metadata!.uid;
    const config = new TextEncoder().encode(JSON.stringify({ hold_url: `${gates.url}/hold/${first}` }));
    const running = c.exec({ session: first, inputs: ["wait"], config });
    await waitFor("the first execution to reach its gate", () => gates.gateRequests(first) > 0);
    expect(gates.gateRequests(first)).toBe(1);
    const refused = await errorOf(c.exec({ session: second, inputs: ["now"] }));
    expect(refused?.code).toBe(Code.ResourceExhausted);
    expect(refused?.rawMessage).toMatch(/already runs 1 executions/);
    expect((await c.get(second)).lastSeq).toBe(0n);
    // Another tenant has its own slot.
    const other = await client({ org: "org-conc-2" });
    expect((await other.exec({ inputs: ["elsewhere"] })).outputs).toEqual(["echo:elsewhere"]);
    gates.openGate(first);
    expect((await running).outputs).toEqual(["echo:wait"]);
    expect((await c.exec({ session: second, inputs: ["now"] })).outputs).toEqual(["echo:now"]);
  });
});
