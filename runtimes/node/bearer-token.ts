/**
 * The shared secret a Runtime service backend (pod, substrate bridge) and the substrate actor
 * agent require: `Authorization: Bearer <token>` on every request (docs/runtimes.md
 * "Authentication"). The token comes from a flag or an environment variable and is never logged.
 * The comparison hashes both sides first, so it takes the same time whatever the guess.
 * @internal Used by rpc-server.ts and the backends' main.ts; tested in test/node/pod/ and
 * test/node/substrate/.
 */
import { createHash, timingSafeEqual } from "node:crypto";

/** Where the pod and the bridge read their token when no `--token` is given. */
export const RUNTIME_TOKEN_ENV = "AGENTSESSIONS_RUNTIME_TOKEN";

/** Tokens shorter than this are refused at startup: a guessable token is no protection. */
const MIN_TOKEN_LENGTH = 16;

/** A check of an Authorization header against `token`. */
export function createBearerCheck(token: string): (authorization: string | undefined) => boolean {
  const want = digest(token);
  return (authorization) => {
    const m = /^Bearer (.+)$/.exec(authorization ?? "");
    return m !== null && timingSafeEqual(digest(m[1]!), want);
  };
}

/**
 * The token a backend requires, from `--token` or else the environment; undefined for none.
 * Throws a message fit for the command line (never echoing the value) when it is too short, or
 * when there is none and `host` is not a loopback address: a Runtime service reachable from other
 * machines without a token would hand anyone who reaches it the power to start harnesses.
 */
export function resolveToken(flag: string | undefined, env: NodeJS.ProcessEnv, host: string, envName = RUNTIME_TOKEN_ENV): string | undefined {
  const token = (flag ?? env[envName] ?? "").trim() || undefined;
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH)
    throw new Error(`the token (--token or ${envName}) must be at least ${MIN_TOKEN_LENGTH} characters`);
  if (token === undefined && !isLoopback(host))
    throw new Error(`--host ${host} is reachable from other machines: set ${envName} (or --token) so callers must authenticate`);
  return token;
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s).digest();
}
