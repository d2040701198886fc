/**
 * AUTH_MODE=keys and the authenticator's modes, in process: keys are looked up by their SHA-256,
 * each maps to a tenant, principal and roles; a bad table, an unset mode and `none` off loopback
 * refuse everything.
 */
import { createHash } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { parseKeyTable } from "../../../worker/auth/api-keys.js";
import { createAuthenticator } from "../../../worker/auth/authenticate.js";
import { rolesFrom } from "../../../worker/auth/principal.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const keys = JSON.stringify([
  { id: "ci", sha256: sha("key-acme-rw"), tenant: "acme", principal: "ci@acme", roles: ["write"] },
  { id: "viewer", sha256: sha("key-acme-ro").toUpperCase(), tenant: "acme", principal: "viewer@acme", roles: ["read", "bogus"] },
]);
const req = (token?: string, host = "api.example.com") =>
  new Request(`https://${host}/agentsessions.v1.Sessions/ListSessions`, { method: "POST", headers: token ? { authorization: `Bearer ${token}` } : {} });

describe("API keys", () => {
  it("parseKeyTable: looks a key up by its hash; unknown role names are dropped; write implies read", () => {
    const t = parseKeyTable(keys);
    if (typeof t === "string") throw new Error(t);
    expect(t.size).toBe(2);
    const p = t.lookup("key-acme-rw")!;
    expect({ tenant: p.tenant, name: p.name, issuer: p.issuer, subject: p.subject, anonymous: p.anonymous }).toEqual({
      tenant: "acme",
      name: "ci@acme",
      issuer: "apikey",
      subject: "ci",
      anonymous: false,
    });
    expect([...p.roles].sort()).toEqual(["read", "write"]);
    expect([...t.lookup("key-acme-ro")!.roles]).toEqual(["read"]);
    expect(t.lookup("key-acme-rw ")).toBeUndefined();
    expect(t.lookup(sha("key-acme-rw"))).toBeUndefined();
  });

  it("parseKeyTable: says what is wrong, and never echoes a hash", () => {
    const bad = (entries: unknown) => parseKeyTable(JSON.stringify(entries)) as string;
    expect(parseKeyTable(undefined)).toMatch(/AUTH_KEYS is empty/);
    expect(parseKeyTable("{not json")).toMatch(/not valid JSON/);
    expect(parseKeyTable('{"a":1}')).toMatch(/must be a JSON list/);
    expect(bad([{ sha256: "abc", tenant: "t", principal: "p", roles: [] }])).toMatch(/AUTH_KEYS\[0\]: sha256 must be/);
    expect(bad([{ sha256: sha("x"), tenant: "Bad Tenant", principal: "p", roles: [] }])).toMatch(/tenant must be/);
    expect(bad([{ sha256: sha("x"), tenant: "t", principal: "", roles: [] }])).toMatch(/principal must be/);
    expect(bad([{ sha256: sha("x"), tenant: "t", principal: "p", roles: "read" }])).toMatch(/roles must be a list/);
    const dup = bad([
      { id: "a", sha256: sha("x"), tenant: "t", principal: "p", roles: [] },
      { id: "b", sha256: sha("x"), tenant: "t", principal: "q", roles: [] },
    ]);
    expect(dup).toMatch(/AUTH_KEYS\[1\] \(b\): the same key is listed twice/);
    expect(dup).not.toContain(sha("x"));
  });

  it("rolesFrom: admin implies every role", () => {
    expect([...rolesFrom(["admin"])].sort()).toEqual(["admin", "approve", "harness", "read", "write"]);
    expect([...rolesFrom(["approve"])]).toEqual(["approve"]);
  });
});

describe("createAuthenticator", () => {
  it("keys: a listed key is its principal; a missing or unknown key is UNAUTHENTICATED with a hint", async () => {
    const auth = createAuthenticator({ AUTH_MODE: "keys", AUTH_KEYS: keys });
    const ok = await auth.authenticate(req("key-acme-rw"));
    expect(ok.ok && ok.principal.name).toBe("ci@acme");
    const missing = await auth.authenticate(req());
    expect(missing).toMatchObject({ ok: false, code: Code.Unauthenticated });
    expect(!missing.ok && missing.message).toContain("AGENTSESSIONS_TOKEN");
    expect(await auth.authenticate(req("nope"))).toMatchObject({ ok: false, code: Code.Unauthenticated });
    expect(await auth.authenticate(new Request("https://x/", { headers: { authorization: "Basic a2V5" } }))).toMatchObject({ ok: false });
  });

  it("none: the local all-roles principal, on loopback only", async () => {
    const auth = createAuthenticator({ AUTH_MODE: "none" });
    for (const host of ["127.0.0.1:8787", "localhost:8787", "[::1]:8787"]) {
      const r = await auth.authenticate(req(undefined, host));
      expect(r.ok && r.principal).toMatchObject({ tenant: "default", name: "local", anonymous: true });
    }
    expect(await auth.authenticate(req(undefined, "sessions.example.com"))).toMatchObject({ ok: false, code: Code.Unauthenticated });
  });

  it("fails closed: unset or unknown AUTH_MODE, or a bad key table, refuses everyone with a message for the operator", async () => {
    for (const env of [{}, { AUTH_MODE: "open" }, { AUTH_MODE: "keys", AUTH_KEYS: "[" }, { AUTH_MODE: "jwt" }]) {
      const r = await createAuthenticator(env).authenticate(req("key-acme-rw", "127.0.0.1"));
      expect(r).toMatchObject({ ok: false, code: Code.Internal });
      expect(!r.ok && r.message).toMatch(/misconfigured/);
    }
  });
});
