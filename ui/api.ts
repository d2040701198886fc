/**
 * The inspector's connection to the host: the SDK's SessionsClient (sdk/client.ts, the same
 * client the CLI uses) on this page's origin, with the bearer token typed into the header. The
 * token is kept for this tab only (sessionStorage) and a new client is made when it changes.
 */
import type { Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { SessionsClient } from "../sdk/client.js";

const TOKEN_KEY = "agentsessions-token";

let client: SessionsClient | undefined;

export function api(): SessionsClient {
  client ??= new SessionsClient({ server: location.origin, token: token() || undefined });
  return client;
}

export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(value: string): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
  client = undefined;
}

/** One page of a project's sessions, newest first. */
export async function sessionsPage(project: string, pageToken: string, pageSize = 50): Promise<{ sessions: Session[]; next: string }> {
  const page = await api().raw.listSessions({ project, pageSize, pageToken });
  return { sessions: page.sessions, next: page.nextPageToken };
}

/** Every session of a project, up to `max` (a tree or an inbox needs them all, within reason). */
export async function allSessions(project: string, max = 2000): Promise<{ sessions: Session[]; truncated: boolean }> {
  const out: Session[] = [];
  let next = "";
  do {
    const page = await sessionsPage(project, next, 200);
    out.push(...page.sessions);
    next = page.next;
  } while (next !== "" && out.length < max);
  return { sessions: out, truncated: next !== "" };
}

/** Committed records from..to (to 0n: the head). */
export async function records(uid: string, from = 1n, to = 0n, signal?: AbortSignal): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of api().replay(uid, { from, to, signal })) out.push(r);
  return out;
}
