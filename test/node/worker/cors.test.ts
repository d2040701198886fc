/**
 * worker/cors.ts in process: the policy read from CORS_ALLOWED_ORIGINS, preflight answers (cached,
 * with the headers Connect and gRPC-Web need) and the headers added to an allowed origin's
 * responses. The same module in a real browser: test/node/integration/cors-browser.test.ts.
 */
import { cors } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { answerPreflight, corsPolicyFromVar, isPreflight, PREFLIGHT_MAX_AGE_SECONDS, serveWithCors, withCorsHeaders } from "../../../worker/cors.js";

const APP = "https://app.example.com";
const RPC = "https://api.example.com/agentsessions.v1.Sessions/CreateSession";

const preflight = (origin: string, method = "POST") =>
  new Request(RPC, { method: "OPTIONS", headers: { origin, "access-control-request-method": method, "access-control-request-headers": "content-type" } });
const list = (h: string | null) => (h ?? "").split(",").map((s) => s.trim().toLowerCase());

describe("corsPolicyFromVar", () => {
  it("corsPolicyFromVar: unset allows no origin", () => {
    expect(corsPolicyFromVar(undefined)).toEqual({ any: false, origins: new Set(), ignored: [] });
    expect(corsPolicyFromVar("  ")).toEqual({ any: false, origins: new Set(), ignored: [] });
  });

  it("corsPolicyFromVar: takes comma- or space-separated origins and *, ignoring what is not an origin", () => {
    const p = corsPolicyFromVar("https://App.example.com, http://127.0.0.1:5173 https://x.example/path *  nope");
    expect(p.any).toBe(true);
    expect([...p.origins]).toEqual(["https://app.example.com", "http://127.0.0.1:5173"]);
    expect(p.ignored).toEqual(["https://x.example/path", "nope"]);
  });
});

describe("preflight", () => {
  it("isPreflight: only an OPTIONS with Origin and Access-Control-Request-Method", () => {
    expect(isPreflight(preflight(APP))).toBe(true);
    expect(isPreflight(new Request(RPC, { method: "OPTIONS", headers: { origin: APP } }))).toBe(false);
    expect(isPreflight(new Request(RPC, { method: "POST", headers: { origin: APP, "access-control-request-method": "POST" } }))).toBe(false);
  });

  it("answerPreflight: an allowed origin gets 204 with Connect's and gRPC-Web's headers, cached for two hours", () => {
    const res = answerPreflight(corsPolicyFromVar(APP), preflight(APP));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(res.headers.get("access-control-max-age")).toBe(String(PREFLIGHT_MAX_AGE_SECONDS));
    expect(PREFLIGHT_MAX_AGE_SECONDS).toBe(7200);
    expect(list(res.headers.get("access-control-allow-methods"))).toEqual(["post", "get"]);
    const allowed = list(res.headers.get("access-control-allow-headers"));
    for (const h of [...cors.allowedHeaders, "authorization", "connect-protocol-version", "connect-timeout-ms", "x-grpc-web", "grpc-timeout"]) {
      expect(allowed, h).toContain(h.toLowerCase());
    }
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    expect(res.headers.get("vary")).toBe("Origin");
  });

  it("answerPreflight: another origin gets 403 naming the variable, without CORS headers", async () => {
    const res = answerPreflight(corsPolicyFromVar(APP), preflight("https://evil.example.com"));
    expect(res.status).toBe(403);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(await res.json()).toEqual({
      code: "permission_denied",
      message: "origin https://evil.example.com may not call this API: add it to CORS_ALLOWED_ORIGINS (docs/deploy.md)",
    });
  });

  it("answerPreflight: * answers any origin with *", () => {
    expect(answerPreflight(corsPolicyFromVar("*"), preflight("https://anyone.example")).headers.get("access-control-allow-origin")).toBe("*");
  });
});

describe("withCorsHeaders", () => {
  const post = (origin?: string) => new Request(RPC, { method: "POST", headers: origin ? { origin } : {}, body: "{}" });

  it("withCorsHeaders: an allowed origin can read the response and gRPC-Web's status headers", async () => {
    const res = withCorsHeaders(corsPolicyFromVar(APP), post(APP), new Response('{"a":1}', { status: 200, headers: { "content-type": "application/json" } }));
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(list(res.headers.get("access-control-expose-headers"))).toEqual(expect.arrayContaining(["grpc-status", "grpc-message", "grpc-status-details-bin"]));
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe('{"a":1}');
  });

  it("withCorsHeaders: no Origin or a foreign one leaves the response as it was", () => {
    const policy = corsPolicyFromVar(APP);
    for (const req of [post(), post("https://evil.example.com")]) {
      const original = new Response("x");
      expect(withCorsHeaders(policy, req, original)).toBe(original);
    }
  });

  it("serveWithCors: answers a preflight without running the route, and decorates what the route answers", async () => {
    let ran = 0;
    const route = async () => {
      ran++;
      return new Response("ok");
    };
    expect((await serveWithCors(APP, preflight(APP), route)).status).toBe(204);
    expect(ran).toBe(0);
    const res = await serveWithCors(APP, post(APP), route);
    expect(ran).toBe(1);
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    // With the variable unset, a preflight is refused and responses carry nothing new.
    expect((await serveWithCors(undefined, preflight(APP), route)).status).toBe(403);
    expect((await serveWithCors(undefined, post(APP), route)).headers.get("access-control-allow-origin")).toBeNull();
  });
});
