/**
 * Authentication in the Worker (docs/security.md), configured by AUTH_MODE:
 *   keys  bearer API keys, looked up by SHA-256 in the AUTH_KEYS secret (api-keys.ts);
 *   jwt   OIDC-style bearer JWTs, RS256/ES256, verified against AUTH_JWT_* (jwt.ts);
 *   none  local development only: every caller is the all-roles `local` principal of the default
 *         tenant, and only on a loopback address (`npm start`, the tests).
 * An unset or unknown AUTH_MODE, or a configuration that does not parse, refuses every request
 * (fail closed) with a message for the operator.
 */
import { Code } from "@connectrpc/connect";
import type { ConfigEnv } from "../../objects/config.js";
import { DEFAULT_TENANT, parseTenantId } from "../../proto/ids.js";
import { parseKeyTable } from "./api-keys.js";
import { createJwtVerifier, parseJwtSettings, type JwtEnv } from "./jwt.js";
import { ROLES, rolesFrom, type Principal } from "./principal.js";

export type AuthEnv = Pick<ConfigEnv, "AUTH_MODE" | "AUTH_KEYS"> & JwtEnv;

export type AuthOutcome = { ok: true; principal: Principal } | { ok: false; code: Code; message: string };

export interface Authenticator {
  readonly mode: string;
  /** Who sent `req`, from its bearer token (or the loopback rule in mode none). */
  authenticate(req: Request): Promise<AuthOutcome>;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);
const TOKEN_HINT = "send Authorization: Bearer <token> (agentctl: --token or AGENTSESSIONS_TOKEN)";

const LOCAL: Principal = { tenant: DEFAULT_TENANT, name: "local", issuer: "local", subject: "local", roles: new Set(ROLES), anonymous: true };

export function createAuthenticator(env: AuthEnv): Authenticator {
  const mode = (env.AUTH_MODE ?? "").trim();
  switch (mode) {
    case "none":
      return {
        mode,
        authenticate: async (req) =>
          LOOPBACK.has(new URL(req.url).hostname)
            ? { ok: true, principal: LOCAL }
            : refusal(Code.Unauthenticated, "AUTH_MODE=none serves loopback addresses only: use keys or jwt for a deployment"),
      };
    case "keys": {
      const table = parseKeyTable(env.AUTH_KEYS);
      if (typeof table === "string") return misconfigured(mode, table);
      return {
        mode,
        authenticate: async (req) => {
          const token = bearerOf(req);
          if (!token) return refusal(Code.Unauthenticated, `an API key is required: ${TOKEN_HINT}`);
          const p = table.lookup(token);
          return p ? { ok: true, principal: p } : refusal(Code.Unauthenticated, "this API key is not valid here: check the token, or ask for a new key");
        },
      };
    }
    case "jwt": {
      const settings = parseJwtSettings(env);
      if (typeof settings === "string") return misconfigured(mode, settings);
      const verifier = createJwtVerifier(settings);
      return {
        mode,
        authenticate: async (req) => {
          const token = bearerOf(req);
          if (!token) return refusal(Code.Unauthenticated, `a bearer JWT is required: ${TOKEN_HINT}`);
          const r = await verifier.verify(token, Math.floor(Date.now() / 1000));
          if (!r.ok && r.unavailable) return refusal(Code.Unavailable, `the JWT cannot be checked now: ${r.reason}; retry shortly`);
          if (!r.ok) return refusal(Code.Unauthenticated, `the JWT was refused: ${r.reason}; get a fresh token from your identity provider`);
          const tenant = parseTenantId(r.identity.tenant);
          if (!tenant) return refusal(Code.Unauthenticated, "the JWT's tenant claim is not a valid tenant id");
          const principal: Principal = {
            tenant,
            name: r.identity.principal,
            issuer: r.identity.issuer,
            subject: r.identity.subject,
            roles: rolesFrom(r.identity.roles),
            anonymous: false,
          };
          return { ok: true, principal };
        },
      };
    }
    default:
      return misconfigured(
        mode,
        mode
          ? `AUTH_MODE ${JSON.stringify(mode.slice(0, 20))} is not one of keys, jwt, none`
          : "AUTH_MODE is not set: set it to keys or jwt (none is for local development)",
      );
  }
}

/** The bearer token of a request, if it has one. */
export function bearerOf(req: Request): string | undefined {
  const h = req.headers.get("authorization") ?? "";
  const token = /^bearer\s+/i.test(h) ? h.replace(/^bearer\s+/i, "").trim() : "";
  return token || undefined;
}

function refusal(code: Code, message: string): AuthOutcome {
  return { ok: false, code, message };
}

/** A deployment whose auth configuration is wrong serves nobody; the operator sees why. */
function misconfigured(mode: string, why: string): Authenticator {
  const message = `this deployment's authentication is misconfigured (${why}); nothing is served until the operator fixes it`;
  return { mode: mode || "unset", authenticate: async () => refusal(Code.Internal, message) };
}
