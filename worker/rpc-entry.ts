/**
 * One RPC through the Worker's front door, in the order that spends least on a caller who should
 * be refused (docs/security.md "Before the body is read"):
 *
 * 1. authenticate from the headers alone, and check the method's role: a caller without a valid
 *    token, or without the role, is refused before a single body byte is read;
 * 2. the tenant's request rate;
 * 3. a body declared (Content-Length) or found larger than MAX_REQUEST_BYTES is refused as soon as
 *    that is known, without reading the rest;
 * 4. only then is the body read (bounded), checked for what the router would misreport
 *    (request-check.ts), and handed to the Connect router.
 *
 * A refusal reads nothing of the body. A body declared (Content-Length) at most twice the limit is
 * left for workerd to discard: the answer goes out once it has arrived, and the connection stays
 * usable. A body declared larger than that (or sent chunked past the limit) is cancelled, so the
 * answer goes out at once rather than after its last byte, and workerd resets the connection if
 * the client keeps sending instead of draining it. (Cancelling small bodies too would make
 * `wrangler dev`'s proxy turn some refusals into "Your worker restarted mid-request": closing a
 * connection that still has unread bytes resets it, which can lose the answer just written.)
 */
import { Code, type ContextValues, createContextValues } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { HostLimits } from "../objects/config.js";
import type { Env } from "../objects/index.js";
import { Sessions } from "../proto/gen/agentsessions/v1/session_pb.js";
import { Tail } from "../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { randomHex } from "../proto/ids.js";
import { type Authenticator, refuseRole } from "./auth/index.js";
import { callerKey } from "./context.js";
import type { LimitGuards } from "./limits.js";
import { type DecodedMessages, refusalFor, refuseMalformed } from "./request-check.js";
import { logRpc } from "./request-log.js";
import { serveBinaryReplay, serveBinaryTail } from "./record-stream-route.js";
import { serveBinaryExec } from "./exec-stream-route.js";
import { serveBinaryUnary, servesUnary } from "./unary-route.js";
import { hostConfig } from "../objects/config.js";
import { type HarnessResolver, servedBuiltins } from "../runtimes/builtin/index.js";
import { serveRpc } from "./router.js";
import { concatBytes } from "../proto/bytes.js";

const REPLAY = Sessions.method.replay;
const EXEC = Sessions.method.exec;
const TAIL = Tail.method.tail;
/** The built-in harnesses, resolved once per isolate (as the router's services do). */
let builtins: HarnessResolver | undefined;

export async function serveRpcRequest(
  env: Env,
  handler: UniversalHandler,
  req: Request,
  auth: Authenticator,
  limits: HostLimits,
  guards: Pick<LimitGuards, "admitRate">,
  /** The request's ctx.waitUntil: work the admission starts beside the request (worker/rate-tokens.ts). */
  waitUntil?: (p: Promise<unknown>) => void,
): Promise<Response> {
  const started = Date.now();
  const requestId = requestIdOf(req);
  const method = handler.method;
  let tenant = "";
  const refuse = async (code: Code, message: string): Promise<Response> => {
    await discardBody(req, limits.maxRequestBytes);
    logRpc({ requestId, tenant, session: "", operation: method.name, code, durationMs: Date.now() - started });
    return refusalFor(method, req, code, message);
  };

  const who = await auth.authenticate(req);
  if (!who.ok) return refuse(who.code, who.message);
  const p = who.principal;
  tenant = p.tenant;
  const forbidden = refuseRole(p, method);
  if (forbidden) return refuse(Code.PermissionDenied, forbidden);
  const rate = await guards.admitRate(p.tenant, waitUntil);
  if (rate) return refuse(Code.ResourceExhausted, rate);

  const max = limits.maxRequestBytes;
  const tooLarge = `the request body is over the limit of ${max} bytes (MAX_REQUEST_BYTES): send less per call (split inputs across turns; send large content by URI)`;
  const declared = Number(req.headers.get("content-length") ?? Number.NaN);
  if (declared > max) return refuse(Code.ResourceExhausted, tooLarge);
  const body = await readAtMost(req, max, declared);
  if (body === undefined) return refuse(Code.ResourceExhausted, tooLarge);

  // The checks and the fast paths read only the method, URL and headers; the router gets a request
  // with the body again.
  const decoded: DecodedMessages = new Map();
  const malformed = refuseMalformed(method, req, body, decoded);
  if (malformed) {
    logRpc({ requestId, tenant, session: "", operation: method.name, code: malformed.code, durationMs: Date.now() - started });
    return malformed.response;
  }
  // A binary Replay or Tail is relayed as the session object's own byte stream (record-stream-route.ts),
  // a binary Exec as the object's frames in envelopes (exec-stream-route.ts), and a binary unary
  // call answered by a Session its object encoded as those bytes (unary-route.ts).
  if (method === REPLAY) {
    const fast = await serveBinaryReplay(env, req, body, { tenant: p.tenant, requestId });
    if (fast) return fast;
  }
  if (method === TAIL) {
    const fast = await serveBinaryTail(env, req, body, { tenant: p.tenant, requestId });
    if (fast) return fast;
  }
  if (method === EXEC) {
    builtins ??= servedBuiltins(hostConfig(env));
    const fast = await serveBinaryExec(env, builtins, limits, req, body, { tenant: p.tenant, requestId, principal: p }, decoded);
    if (fast) return fast;
  }
  if (servesUnary(method)) {
    builtins ??= servedBuiltins(hostConfig(env));
    const fast = await serveBinaryUnary(env, method, req, body, { tenant: p.tenant, requestId, principal: p, harnesses: builtins }, method.name, decoded);
    if (fast) return fast;
  }
  const values: ContextValues = createContextValues();
  values.set(callerKey, { tenant: p.tenant, requestId, principal: p });
  return serveRpc(handler, withBody(req, body), values);
}

/** Gives up a body this request will not read (see the header); a no-op once it was read. */
export async function discardBody(req: Request, max: number): Promise<void> {
  if (!req.body || req.bodyUsed || req.body.locked) return;
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) <= 2 * max) return;
  await req.body.cancel().catch(() => undefined);
}

/** The whole body, or undefined as soon as it passes `max` bytes (the rest is cancelled unread). */
async function readAtMost(req: Request, max: number, declared: number): Promise<Uint8Array | undefined> {
  if (!req.body) return new Uint8Array(0);
  // A declared length (already checked against max) is what HTTP framing delivers: read it at once.
  if (Number.isInteger(declared) && declared >= 0 && declared <= max) return new Uint8Array(await req.arrayBuffer());
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return chunks.length === 0 ? new Uint8Array(0) : concatBytes(chunks);
}

/** The request with its body already read, for the router to read again. */
function withBody(req: Request, body: Uint8Array): Request {
  const headers = new Headers(req.headers);
  headers.delete("content-length");
  return new Request(req.url, { method: req.method, headers, body: req.body ? body : null, signal: req.signal });
}

function requestIdOf(req: Request): string {
  const given = req.headers.get("x-request-id");
  return given && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : randomHex(8);
}
