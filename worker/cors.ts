/**
 * CORS for the Sessions API, so a web app on another origin can call it (docs/deploy.md, "CORS").
 *
 * Origins are allowed only by name, from `CORS_ALLOWED_ORIGINS` (none by default: browsers then
 * block every cross-origin call, as before). A preflight is answered here, before authentication:
 * browsers send it without credentials, and it reveals nothing but the policy. Actual responses to
 * an allowed origin get `Access-Control-Allow-Origin` and the headers a Connect or gRPC-Web
 * client must read (`grpc-status`, `grpc-message`, ...). Credentials mode is never allowed: the
 * API takes bearer tokens, not cookies. Used by worker/index.ts; tested in test/node/worker/cors.test.ts
 * and, from a page on another origin in Chromium, test/node/integration/cors-browser.test.ts.
 */
import { cors } from "@connectrpc/connect";
import { writeLogLine } from "../objects/log-line.js";

/** Chromium caps a cached preflight at two hours (Firefox at a day): the most that is honoured everywhere. */
export const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/** Connect's and gRPC-Web's request headers, plus the bearer token and our request id. */
const ALLOW_HEADERS = [...cors.allowedHeaders, "Authorization", "X-Request-Id"].join(", ");
const ALLOW_METHODS = cors.allowedMethods.join(", ");
const EXPOSE_HEADERS = cors.exposedHeaders.join(", ");

export interface CorsPolicy {
  /** `*` (any origin), or the exact origins allowed. */
  any: boolean;
  origins: ReadonlySet<string>;
  /** Entries that are not an origin (`https://host[:port]`), ignored: logged once by the caller. */
  ignored: string[];
}

/**
 * Parses `CORS_ALLOWED_ORIGINS`: origins separated by commas or spaces, each `scheme://host[:port]`
 * exactly as a browser sends it in `Origin` (no path, no trailing slash), or `*` for any origin.
 */
export function corsPolicyFromVar(raw: string | undefined): CorsPolicy {
  const origins = new Set<string>();
  const ignored: string[] = [];
  let any = false;
  for (const entry of (raw ?? "").split(/[\s,]+/).filter((e) => e !== "")) {
    if (entry === "*") any = true;
    else if (isOrigin(entry)) origins.add(entry.toLowerCase());
    else ignored.push(entry);
  }
  return { any, origins, ignored };
}

function isOrigin(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === "https:" || u.protocol === "http:") && u.origin === s.toLowerCase();
  } catch {
    return false;
  }
}

function allows(p: CorsPolicy, origin: string | null): origin is string {
  return origin !== null && (p.any || p.origins.has(origin.toLowerCase()));
}

/** A CORS preflight: OPTIONS with an Origin and the method the page wants to use. */
export function isPreflight(req: Request): boolean {
  return req.method === "OPTIONS" && req.headers.has("origin") && req.headers.has("access-control-request-method");
}

/** The answer to a preflight: 204 with the policy for an allowed origin, else 403 saying what to set. */
export function answerPreflight(p: CorsPolicy, req: Request): Response {
  const origin = req.headers.get("origin");
  if (!allows(p, origin)) {
    return Response.json(
      { code: "permission_denied", message: `origin ${origin} may not call this API: add it to CORS_ALLOWED_ORIGINS (docs/deploy.md)` },
      { status: 403, headers: { vary: "Origin" } },
    );
  }
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-origin": p.any ? "*" : origin,
      "access-control-allow-methods": ALLOW_METHODS,
      "access-control-allow-headers": ALLOW_HEADERS,
      "access-control-max-age": String(PREFLIGHT_MAX_AGE_SECONDS),
      vary: "Origin",
    },
  });
}

/** `res` with the CORS headers an allowed origin needs to read it; unchanged for anyone else. */
export function withCorsHeaders(p: CorsPolicy, req: Request, res: Response): Response {
  const origin = req.headers.get("origin");
  // A WebSocket upgrade (the harness tunnel) is not subject to CORS, and its 101 cannot be copied.
  if (!allows(p, origin) || res.status === 101) return res;
  const out = new Response(res.body, res);
  out.headers.set("access-control-allow-origin", p.any ? "*" : origin);
  out.headers.set("access-control-expose-headers", EXPOSE_HEADERS);
  out.headers.append("vary", "Origin");
  return out;
}

let cached: { raw: string | undefined; policy: CorsPolicy } | undefined;

/**
 * Runs `next` under the CORS policy of `raw` (parsed once per isolate): a preflight is answered
 * without calling it; any other response gets the headers its origin is allowed.
 */
export async function serveWithCors(raw: string | undefined, req: Request, next: () => Promise<Response>): Promise<Response> {
  if (!cached || cached.raw !== raw) {
    cached = { raw, policy: corsPolicyFromVar(raw) };
    if (cached.policy.ignored.length > 0) {
      writeLogLine({
        level: "warn",
        msg: "config",
        ignored: ["CORS_ALLOWED_ORIGINS"],
        detail: "entries that are not an origin (scheme://host[:port]) are ignored; fix the variable",
      });
    }
  }
  const policy = cached.policy;
  if (isPreflight(req)) return answerPreflight(policy, req);
  return withCorsHeaders(policy, req, await next());
}
