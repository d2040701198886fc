/**
 * The Sessions service (docs/contract.md §2.1) as the Worker serves it: validate, resolve the caller's
 * tenant, route to the session's Durable Object (or the tenant's Directory) and translate outcomes.
 * No session logic lives here (docs/design.md §2).
 */
import { create } from "@bufbuild/protobuf";
import { decodeBinary } from "../proto/binary-reader.js";
import { encodeBinary } from "../proto/binary-writer.js";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { EventSchema, LogRecordSchema } from "../proto/gen/agentsessions/v1/common_pb.js";
import {
  ExecRequestSchema,
  ExecUpdateSchema,
  SessionSchema,
  type Sessions,
  type CreateSessionRequest,
  type ExecRequest,
  type Session,
} from "../proto/gen/agentsessions/v1/session_pb.js";
import { isHarnessName } from "../proto/harness-name.js";
import { mintSessionUid, parseSessionUid, type SessionUid } from "../proto/ids.js";
import { DEFAULT_HARNESS, servedBuiltins, unknownHarnessMessage, type HarnessResolver } from "../runtimes/builtin/index.js";
import { hostConfig } from "../objects/config.js";
import { directoryStub, failure, FrameDecoder, sessionStub, tunnelStub, type Env } from "../objects/index.js";
import type { FrameStart } from "../objects/exec-frames.js";
import type { ExecWire } from "../objects/session/object.js";
import { recordedIdentity } from "./auth/index.js";
import { binaryPassthrough, logRecordWithEventBytes } from "../proto/passthrough.js";
import { callerOf, noteSession, principalOf, wantsBinary } from "./context.js";
import { connectErrorFrom } from "./errors.js";
import { forkSession } from "./fork.js";
import { checkStructDepth, type LimitGuards } from "./limits.js";
import type { HostLimits } from "../objects/config.js";

export const DEFAULT_PROJECT = "default";
const REPLAY_PAGE = 500;

export function createSessionsService(env: Env, guards: LimitGuards): ServiceImpl<typeof Sessions> {
  const { limits } = guards;
  const config = hostConfig(env);
  const harnesses = servedBuiltins(config);
  return {
    async createSession(req, ctx) {
      const created = await createSession(env, harnesses, ctx, req);
      noteSession(ctx, created.uid);
      return decodeBinary(SessionSchema, created.bytes);
    },

    async getSession(req, ctx) {
      const uid = requireUid(req.uid, "uid");
      noteSession(ctx, uid);
      const r = await sessionStub(env, callerOf(ctx).tenant, uid).get();
      if (!r.ok) throw connectErrorFrom(r);
      return decodeBinary(SessionSchema, r.value);
    },

    async listSessions(req, ctx) {
      const page = await listPage(env, callerOf(ctx).tenant, req);
      return { sessions: page.sessions.map((b) => decodeBinary(SessionSchema, b)), nextPageToken: page.nextPageToken };
    },

    async *exec(req, ctx) {
      const frames = await openExec(env, harnesses, limits, ctx, req);
      const decoder = new FrameDecoder();
      const binary = wantsBinary(ctx);
      const reader = frames.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const f of decoder.push(value)) {
            if (f.kind === "failure") throw connectErrorFrom(f.failure);
            if (f.kind === "end") {
              void reader.cancel().catch(() => undefined);
              return;
            }
            // Binary callers get the object's bytes as they are; JSON needs them decoded.
            yield binary ? binaryPassthrough(ExecUpdateSchema, f.bytes) : decodeBinary(ExecUpdateSchema, f.bytes);
          }
        }
      } finally {
        reader.releaseLock();
      }
      if (!decoder.drained) throw new ConnectError(EXEC_CUT_SHORT, Code.Unavailable);
    },

    async *replay(req, ctx) {
      const uid = requireUid(req.session, "session");
      noteSession(ctx, uid);
      const stub = sessionStub(env, callerOf(ctx).tenant, uid);
      const binary = wantsBinary(ctx);
      let from = req.fromSeq < 1n ? 1n : req.fromSeq;
      for (;;) {
        const r = await stub.read(from, req.toSeq, REPLAY_PAGE);
        if (!r.ok) throw connectErrorFrom(r);
        for (const rec of r.value) {
          // Binary callers get the stored event bytes as they are; JSON needs the event decoded.
          yield binary
            ? logRecordWithEventBytes(rec)
            : create(LogRecordSchema, {
                seq: rec.seq,
                prevHash: rec.prevHash,
                contentHash: rec.hash,
                fence: rec.fence,
                event: decodeBinary(EventSchema, rec.event),
              });
        }
        if (r.value.length < REPLAY_PAGE) return;
        from = r.value[r.value.length - 1]!.seq + 1n;
      }
    },

    async deleteSession(req, ctx) {
      const uid = requireUid(req.uid, "uid");
      noteSession(ctx, uid);
      const tenant = callerOf(ctx).tenant;
      const r = await sessionStub(env, tenant, uid).delete(tenant);
      if (!r.ok) throw connectErrorFrom(r);
      return decodeBinary(SessionSchema, r.value);
    },

    async cancel(req, ctx) {
      const uid = requireUid(req.session, "session");
      noteSession(ctx, uid);
      const r = await sessionStub(env, callerOf(ctx).tenant, uid).cancel(req.executionId, req.reason);
      if (!r.ok) throw connectErrorFrom(r);
      return decodeBinary(SessionSchema, r.value);
    },

    async suspend(req, ctx) {
      const uid = requireUid(req.session, "session");
      noteSession(ctx, uid);
      const r = await sessionStub(env, callerOf(ctx).tenant, uid).suspend(callerOf(ctx).requestId);
      if (!r.ok) throw connectErrorFrom(r);
      return decodeBinary(SessionSchema, r.value);
    },
    async resume(req, ctx) {
      const uid = requireUid(req.session, "session");
      noteSession(ctx, uid);
      const r = await sessionStub(env, callerOf(ctx).tenant, uid).resume(callerOf(ctx).requestId);
      if (!r.ok) throw connectErrorFrom(r);
      return decodeBinary(SessionSchema, r.value);
    },
    async fork(req, ctx) {
      // Validation order and messages follow docs/behaviour.md §4.7: identity first, never echoing it.
      if (req.identity !== undefined) {
        throw new ConnectError("ForkRequest.identity is unsupported: per-child principals are not enforced", Code.InvalidArgument);
      }
      if (req.count > limits.maxForkCount) {
        throw new ConnectError(`count ${req.count} is over the limit of ${limits.maxForkCount} children per fork: fork in several calls`, Code.InvalidArgument);
      }
      const count = req.count <= 0 ? 1 : req.count;
      if (req.childNames.length !== 0 && req.childNames.length !== count) {
        throw new ConnectError(
          `child_names has ${req.childNames.length} names for ${count} children: give none or exactly one per child`,
          Code.InvalidArgument,
        );
      }
      const uid = requireUid(req.session, "session");
      noteSession(ctx, uid);
      return { children: await forkSession(env, callerOf(ctx).tenant, uid, req, callerOf(ctx).requestId) };
    },
    async approve(req, ctx) {
      // docs/behaviour.md §4.11: every field is required, and an absent decision is never read as a denial.
      const uid = requireUid(req.session, "session");
      if (!req.executionId || !req.toolCallId)
        throw new ConnectError(
          "execution_id and tool_call_id are required: they name the pending approval (see the session's pending_approval)",
          Code.InvalidArgument,
        );
      // request_seq's range (1 or more) is a strict-numbers rule (proto/numbers.ts).
      if (req.approved === undefined) throw new ConnectError("approved must be set explicitly: true to approve, false to deny", Code.InvalidArgument);
      noteSession(ctx, uid);
      const r = await sessionStub(env, callerOf(ctx).tenant, uid).approve({
        executionId: req.executionId,
        toolCallId: req.toolCallId,
        requestSeq: req.requestSeq,
        approved: req.approved,
        reason: req.reason,
        identity: recordedIdentity(principalOf(ctx), req.identity, "identity"),
      });
      if (!r.ok) throw connectErrorFrom(r);
      const d = r.value.decision;
      return {
        session: decodeBinary(SessionSchema, r.value.session),
        decision: { seq: d.seq, prevHash: d.prevHash, contentHash: d.hash, fence: d.fence, event: decodeBinary(EventSchema, d.event) },
      };
    },
  };
}

/**
 * CreateSession: the new session's uid and its Session as the new object encoded it (the router's
 * handler decodes it; worker/unary-route.ts sends it as it is).
 */
export async function createSession(
  env: Env,
  harnesses: HarnessResolver,
  ctx: HandlerContext,
  req: CreateSessionRequest,
): Promise<{ uid: SessionUid; bytes: Uint8Array }> {
  const s = req.session ?? create(SessionSchema);
  const harness = s.harness || DEFAULT_HARNESS;
  if (!harnesses.get(harness)) {
    const reg = await directoryStub(env, callerOf(ctx).tenant).lookupHarness(harness);
    if (reg?.state === "retired") {
      throw new ConnectError(
        `harness "${harness}" is retired: new sessions cannot select it (existing ones keep running); choose another`,
        Code.FailedPrecondition,
      );
    }
    if (!reg && !(await tunnelServes(env, callerOf(ctx).tenant, harness))) {
      throw new ConnectError(unknownHarnessMessage(harness, harnesses), Code.InvalidArgument);
    }
  }
  const statics = create(SessionSchema, {
    metadata: { project: s.metadata?.project || DEFAULT_PROJECT, name: s.metadata?.name ?? "" },
    harness,
    model: s.model,
    labels: s.labels,
    annotations: s.annotations,
    origin: isEmptyOrigin(s.origin) ? undefined : s.origin,
    identity: recordedIdentity(principalOf(ctx), s.identity, "session.identity"),
  });
  const uid = mintSessionUid();
  const r = await sessionStub(env, callerOf(ctx).tenant, uid).create(callerOf(ctx).tenant, uid, encodeBinary(SessionSchema, statics));
  if (!r.ok) throw connectErrorFrom(r);
  return { uid, bytes: r.value };
}

export const EXEC_CUT_SHORT = "the turn's stream was cut short; read the session and Replay";

/**
 * What Exec does before its stream: the request's limits, an empty `session` created first, and
 * the session object's frame stream opened (objects/exec-frames.ts). Shared by the router's
 * handler above and the binary fast path (worker/exec-stream-route.ts), so both refuse alike.
 */
export async function openExec(
  env: Env,
  harnesses: HarnessResolver,
  limits: HostLimits,
  ctx: HandlerContext,
  req: ExecRequest,
  /**
   * `req`'s own binary encoding, when the caller has it: sent to the object as it is when the
   * request already names its session, since the object decodes the message checked here.
   */
  encoded?: Uint8Array,
): Promise<ReadableStream<Uint8Array>> {
  const start = await openExecWhole(env, harnesses, limits, ctx, req, encoded);
  return "frames" in start ? start.frames : wholeStream(start.whole);
}

/**
 * openExec for a reader that takes a turn that ended at once as bytes (objects/exec-frames.ts
 * `FrameStart`): the binary fast path. A session object of an older version answers with a stream.
 */
export async function openExecWhole(
  env: Env,
  harnesses: HarnessResolver,
  limits: HostLimits,
  ctx: HandlerContext,
  req: ExecRequest,
  encoded?: Uint8Array,
  /** The answer in the caller's protocol, written whole by the session object (worker/exec-stream-route.ts). */
  wire?: ExecWire,
): Promise<FrameStart> {
  if (req.inputs.length > limits.maxInputsPerExec) {
    throw new ConnectError(
      `an Exec carries at most ${limits.maxInputsPerExec} inputs, this one ${req.inputs.length}: split it into several turns`,
      Code.InvalidArgument,
    );
  }
  checkStructDepth(ExecRequestSchema, req, limits.maxStructDepth, "this Exec request");
  let uid: SessionUid;
  if (req.session === "") {
    const created = await createSession(env, harnesses, ctx, {
      session: create(SessionSchema, { harness: req.harness }),
    } as CreateSessionRequest);
    uid = created.uid;
  } else {
    uid = requireUid(req.session, "session");
  }
  noteSession(ctx, uid);
  const bytes = encoded && req.session === uid ? encoded : encodeBinary(ExecRequestSchema, { ...req, session: uid });
  const caller = callerOf(ctx);
  // Ends with the end frame: both readers of this stream (the router's exec, serveBinaryExec) know it.
  const start = await sessionStub(env, caller.tenant, uid).exec(bytes, caller.requestId, true, true, wire);
  if (!start.ok) throw connectErrorFrom(start);
  return "whole" in start ? { whole: start.whole } : { frames: start.frames };
}

function wholeStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      c.enqueue(bytes);
      c.close();
    },
  });
}

/**
 * One page of ListSessions with each Session as its encoded bytes (the router's handler decodes
 * them; worker/unary-route.ts sends them as they are). A page token this server did not issue is
 * INVALID_ARGUMENT.
 */
export async function listPage(
  env: Env,
  tenant: string,
  req: { project: string; pageSize: number; pageToken: string },
): Promise<{ sessions: Uint8Array[]; nextPageToken: string }> {
  const project = req.project || DEFAULT_PROJECT;
  const r = await directoryStub(env, tenant).list(project, req.pageSize, req.pageToken);
  if (!r.ok) throw connectErrorFrom(failure("invalid_request", "page_token is not a token this server issued: start again with an empty page_token"));
  await refreshLiveRows(env, tenant, r);
  return { sessions: r.sessions, nextPageToken: r.nextPageToken };
}

/**
 * A live row's stored Session may trail its session (objects/session/directory-reports.ts): each
 * is replaced by what its session answers now, all asked at once. A session that cannot answer
 * keeps its stored row, which is its state as of its last report.
 */
async function refreshLiveRows(env: Env, tenant: string, page: { sessions: Uint8Array[]; live: { index: number; uid: string }[] }): Promise<void> {
  await Promise.all(
    page.live.map(async ({ index, uid }) => {
      const now = await sessionStub(env, tenant, uid)
        .listing()
        .catch(() => undefined);
      if (now?.ok) page.sessions[index] = now.value;
    }),
  );
}

/** An empty uid is malformed (INVALID_ARGUMENT); a malformed one names no session (NOT_FOUND). */
export function requireUid(value: string, field: string): SessionUid {
  if (value === "") throw new ConnectError(`${field} is required: pass a session uid (sess-…)`, Code.InvalidArgument);
  const uid = parseSessionUid(value);
  if (!uid) throw new ConnectError("session not found: session uids look like sess- followed by 24 hex digits", Code.NotFound);
  return uid;
}

/** A name a harness has connected under (now or before) is served over the tunnel. */
async function tunnelServes(env: Env, tenant: string, name: string): Promise<boolean> {
  if (!isHarnessName(name)) return false;
  const s = await tunnelStub(env, tenant, name).status();
  return s.known || s.connected > 0;
}

function isEmptyOrigin(o: Session["origin"]): boolean {
  return !o || (!o.source && !o.subject && !o.uri && Object.keys(o.attributes).length === 0);
}
