/**
 * The unary calls whose answer is made of Sessions already encoded, served in binary Connect
 * without the router: CreateSession, GetSession, DeleteSession, Suspend, Resume and Cancel answer
 * with the bytes their session object encoded, as they are; ListSessions writes its page around
 * the Directory's rows (and a live session's own answer). Through connect-es, the Worker decoded those bytes into
 * messages and the router encoded them again, on top of its own per-call machinery: a GetSession
 * took 0.6-0.8 ms longer that way, side by side (docs/performance.md, "Thirty-second round").
 *
 * A narrow fast path in front of the router (worker/rpc-entry.ts calls it after authentication,
 * the role check, the size limit and request-check): a POST of `application/proto`, uncompressed,
 * without a deadline header. Anything else (JSON, a Connect GET, compression, a deadline,
 * gRPC-Web) goes to the router, which serves it the same way from decoded messages. Both refuse
 * in the same words with the same code and status, and both write the request's `rpc` line;
 * test/node/integration/unary-route.test.ts compares their answers on a real host.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import { type Env, sessionStub } from "../objects/index.js";
import type { Outcome } from "../objects/session/outcomes.js";
import { decodeBinary } from "../proto/binary-reader.js";
import {
  CancelRequestSchema,
  CreateSessionRequestSchema,
  DeleteSessionRequestSchema,
  GetSessionRequestSchema,
  ListSessionsRequestSchema,
  ResumeRequestSchema,
  Sessions,
  SuspendRequestSchema,
} from "../proto/gen/agentsessions/v1/session_pb.js";
import { numberViolation } from "../proto/numbers.js";
import { listSessionsResponseBytes } from "../proto/record-envelopes.js";
import { connectErrorFrom } from "./errors.js";
import { classifyFault } from "./faults.js";
import type { DecodedMessages } from "./request-check.js";
import { logRpc } from "./request-log.js";
import { createSession, listPage, requireUid } from "./sessions-service.js";
import { type Caller, callerKey } from "./context.js";
import type { HarnessResolver } from "../runtimes/builtin/index.js";

export interface UnaryCaller extends Caller {
  /** The harnesses this host serves built in (CreateSession checks the one asked for). */
  harnesses: HarnessResolver;
}

type SessionObject = ReturnType<typeof sessionStub>;

/**
 * One method: its request's schema and its answer's bytes. `answer` throws a ConnectError to
 * refuse, in the router handler's words (sessions-service.ts), and names the session it is about
 * with `noted` as soon as the request names a valid one (the `rpc` line's session, as the router's
 * handlers note it).
 */
interface Unary<Desc extends DescMessage> {
  schema: Desc;
  answer(env: Env, request: MessageShape<Desc>, caller: UnaryCaller, noted: (uid: string) => void): Promise<Uint8Array>;
}

function unary<Desc extends DescMessage>(u: Unary<Desc>): Unary<DescMessage> {
  return u as unknown as Unary<DescMessage>;
}

/** A call its session object answers with the Session's bytes: `field` names the session. */
function sessionUnary<Desc extends DescMessage>(
  schema: Desc,
  field: "uid" | "session",
  call: (object: SessionObject, request: MessageShape<Desc>, caller: UnaryCaller) => Promise<Outcome<Uint8Array>>,
): Unary<DescMessage> {
  return unary({
    schema,
    async answer(env, request, caller, noted) {
      const uid = requireUid((request as unknown as Record<string, string>)[field]!, field);
      noted(uid);
      const r = await call(sessionStub(env, caller.tenant, uid), request, caller);
      if (!r.ok) throw connectErrorFrom(r);
      return r.value;
    },
  });
}

/** The methods served here, by the router's method descriptor (the same calls sessions-service.ts makes). */
const UNARIES = new Map<unknown, Unary<DescMessage>>([
  [Sessions.method.getSession, sessionUnary(GetSessionRequestSchema, "uid", (o) => o.get())],
  [Sessions.method.deleteSession, sessionUnary(DeleteSessionRequestSchema, "uid", (o, _r, c) => o.delete(c.tenant))],
  [Sessions.method.suspend, sessionUnary(SuspendRequestSchema, "session", (o, _r, c) => o.suspend(c.requestId))],
  [Sessions.method.resume, sessionUnary(ResumeRequestSchema, "session", (o, _r, c) => o.resume(c.requestId))],
  [Sessions.method.cancel, sessionUnary(CancelRequestSchema, "session", (o, r) => o.cancel(r.executionId, r.reason))],
  [
    Sessions.method.createSession,
    unary({
      schema: CreateSessionRequestSchema,
      // The handler's own steps (harness checks, identity, the new object), with the caller in the
      // context values its helpers read, as the router hands them.
      answer: async (env, request, caller, noted) => {
        const values = createContextValues();
        values.set(callerKey, caller);
        const created = await createSession(env, caller.harnesses, { values } as HandlerContext, request);
        noted(created.uid);
        return created.bytes;
      },
    }),
  ],
  [
    Sessions.method.listSessions,
    unary({
      schema: ListSessionsRequestSchema,
      // The Directory's rows (and a live session's own answer) are Sessions as their bytes: the page is written around them.
      answer: async (env, request, caller) => {
        const page = await listPage(env, caller.tenant, request);
        return listSessionsResponseBytes(page.sessions, page.nextPageToken);
      },
    }),
  ],
]);

/** Whether `method` is one this fast path may serve (the rest go straight to the router). */
export function servesUnary(method: unknown): boolean {
  return UNARIES.has(method);
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
  const u = UNARIES.get(method);
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
  let bytes: Uint8Array;
  try {
    bytes = await u.answer(env, request, caller, (uid) => (session = uid));
  } catch (e) {
    // A refusal in the handler's words; anything else is INTERNAL with a fault line, as the router's classifyFaults makes it.
    return fail(classifyFault(e, caller.requestId, operation));
  }
  log(undefined);
  return new Response(bytes, { status: 200, headers: { "content-type": "application/proto" } });
}
