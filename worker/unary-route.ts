/**
 * The unary calls whose whole answer is a Session its object already encoded (GetSession,
 * DeleteSession, Suspend, Resume, Cancel), served in binary Connect without the
 * router: the object's bytes go to the caller as they are. Through connect-es, the Worker decoded
 * those bytes into a message and the router encoded it again, on top of its own per-call
 * machinery: a GetSession took 0.6-0.8 ms longer that way than answered with the object's bytes as
 * they are, side by side (docs/performance.md, "Thirty-second round").
 *
 * A narrow fast path in front of the router (worker/rpc-entry.ts calls it after authentication,
 * the role check, the size limit and request-check): a POST of `application/proto`, uncompressed,
 * without a deadline header. Anything else (JSON, a Connect GET, compression, a deadline,
 * gRPC-Web) goes to the router, which serves it the same way from decoded messages. Both refuse
 * in the same words with the same code and status, and both write the request's `rpc` line;
 * test/node/integration/unary-route.test.ts compares their answers on a real host.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import { type Env, sessionStub } from "../objects/index.js";
import type { Outcome } from "../objects/session/outcomes.js";
import { decodeBinary } from "../proto/binary-reader.js";
import {
  CancelRequestSchema,
  DeleteSessionRequestSchema,
  GetSessionRequestSchema,
  ResumeRequestSchema,
  Sessions,
  SuspendRequestSchema,
} from "../proto/gen/agentsessions/v1/session_pb.js";
import { numberViolation } from "../proto/numbers.js";
import { connectErrorFrom } from "./errors.js";
import { classifyFault } from "./faults.js";
import type { DecodedMessages } from "./request-check.js";
import { logRpc } from "./request-log.js";
import { requireUid } from "./sessions-service.js";

export interface UnaryCaller {
  tenant: string;
  requestId: string;
}

type SessionObject = ReturnType<typeof sessionStub>;

/** One method: where its request names the session, and the object call that answers it. */
interface SessionUnary<Desc extends DescMessage> {
  schema: Desc;
  /** The request's field that names the session, as the router's handler reads it (for its words). */
  field: "uid" | "session";
  call(object: SessionObject, request: MessageShape<Desc>, caller: UnaryCaller): Promise<Outcome<Uint8Array>>;
}

function unary<Desc extends DescMessage>(u: SessionUnary<Desc>): SessionUnary<DescMessage> {
  return u as unknown as SessionUnary<DescMessage>;
}

/** The methods served here, by the router's method descriptor (the same calls sessions-service.ts makes). */
const SESSION_UNARIES = new Map<unknown, SessionUnary<DescMessage>>([
  [Sessions.method.getSession, unary({ schema: GetSessionRequestSchema, field: "uid", call: (o) => o.get() })],
  [Sessions.method.deleteSession, unary({ schema: DeleteSessionRequestSchema, field: "uid", call: (o, _r, c) => o.delete(c.tenant) })],
  [Sessions.method.suspend, unary({ schema: SuspendRequestSchema, field: "session", call: (o, _r, c) => o.suspend(c.requestId) })],
  [Sessions.method.resume, unary({ schema: ResumeRequestSchema, field: "session", call: (o, _r, c) => o.resume(c.requestId) })],
  [Sessions.method.cancel, unary({ schema: CancelRequestSchema, field: "session", call: (o, r) => o.cancel(r.executionId, r.reason) })],
]);

/** Whether `method` is one this fast path may serve (the rest go straight to the router). */
export function servesUnary(method: unknown): boolean {
  return SESSION_UNARIES.has(method);
}

/** The answer, or undefined when the router should serve this request. */
export async function serveBinaryUnary(
  env: Env,
  method: unknown,
  req: Request,
  body: Uint8Array,
  caller: UnaryCaller,
  operation: string,
  /** What the request check already decoded (request-check.ts): a unary body's message is at 0. */
  decoded?: DecodedMessages,
): Promise<Response | undefined> {
  const u = SESSION_UNARIES.get(method);
  if (!u || req.method !== "POST") return undefined;
  const ct = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (ct !== "application/proto") return undefined;
  const encoding = req.headers.get("content-encoding");
  if ((encoding && encoding !== "identity") || req.headers.has("connect-timeout-ms")) return undefined;
  let request = decoded?.get(0) as MessageShape<DescMessage> | undefined;
  try {
    request ??= decodeBinary(u.schema, body);
  } catch {
    return undefined;
  }

  const started = Date.now();
  let session = "";
  const log = (code: Code | undefined) =>
    logRpc({ requestId: caller.requestId, tenant: caller.tenant, session, operation, code, durationMs: Date.now() - started });
  const fail = (e: ConnectError) => {
    log(e.code);
    // The router's unary error: the code's HTTP status, and the code and message as JSON.
    return Response.json({ code: codeToString(e.code), message: e.rawMessage }, { status: codeToHttpStatus(e.code) });
  };

  const bad = numberViolation(u.schema, request);
  if (bad) return fail(new ConnectError(`${bad}; nothing was done`, Code.InvalidArgument));
  try {
    session = requireUid((request as unknown as Record<string, string>)[u.field]!, u.field);
  } catch (e) {
    return fail(ConnectError.from(e));
  }
  let r: Outcome<Uint8Array>;
  try {
    r = await u.call(sessionStub(env, caller.tenant, session), request, caller);
  } catch (e) {
    return fail(classifyFault(e, caller.requestId, operation));
  }
  if (!r.ok) return fail(connectErrorFrom(r));
  log(undefined);
  return new Response(r.value, { status: 200, headers: { "content-type": "application/proto" } });
}
