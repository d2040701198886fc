/**
 * Exec in a binary encoding, served without the router's streaming machinery: the session object
 * writes the answer exactly as the client reads it (objects/exec-frames.ts, with the caller's
 * `ending`): its update frames are laid out as Connect / gRPC-Web data envelopes, and it ends the
 * stream with that protocol's OK or error ending. An answer that the object gave whole (a turn
 * that never waited, such as an echo turn: objects/exec-frames.ts `FrameStart`) goes as one body
 * of known length; anything longer is the object's own stream, which workerd pumps to the caller
 * without calling into this isolate for each chunk (a model's streamed answer is many chunks).
 * Connect-es would decode nothing here either (binary passthrough), but it pipes each message
 * through several async generators; this is the turn's hot path.
 *
 * Like the Replay fast path (record-stream-route.ts), it serves only one plain binary envelope
 * without a deadline header, after rpc-entry.ts authenticated, authorized, rate-limited and
 * checked the request; anything else goes to the router. The checks before the stream are the
 * router's own (sessions-service.ts openExec), so both refuse in the same words; a non-Connect
 * error is INTERNAL with a fault line, as classifyFaults makes it. A refusal before the object
 * writes its `rpc` line here; an answer the object gave, the object writes (with the first
 * message's time), once it ended, or with CANCELED when the caller went away first. A stream its
 * object stopped sending mid-turn (the object restarted) reaches the client without its ending,
 * which a client reads as a broken stream, never as a complete one. Tested against the router's
 * answers in test/node/integration/stream-routes.test.ts.
 */
import { decodeBinary } from "../proto/binary-reader.js";
import { Code, ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import type { HostLimits } from "../objects/config.js";
import type { Env } from "../objects/index.js";
import type { FrameStart } from "../objects/exec-frames.js";
import { type ExecRequest, ExecRequestSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { numberViolation } from "../proto/numbers.js";
import type { HarnessResolver } from "../runtimes/builtin/index.js";
import { type Caller, callerKey, type LogFields, logFieldsKey } from "./context.js";
import { classifyFault } from "./faults.js";
import { binaryStreamCall, streamEndOf } from "./record-stream-route.js";
import type { DecodedMessages } from "./request-check.js";
import { logRpc } from "./request-log.js";
import { openExecWhole } from "./sessions-service.js";

/** The Exec answer, or undefined when the router should serve this request. */
export async function serveBinaryExec(
  env: Env,
  harnesses: HarnessResolver,
  limits: HostLimits,
  req: Request,
  body: Uint8Array,
  caller: Caller,
  /** What the request check already decoded (request-check.ts). */
  decoded?: DecodedMessages,
): Promise<Response | undefined> {
  const call = binaryStreamCall(req, body);
  if (!call) return undefined;
  let request = decoded?.get(call.payload.byteOffset - body.byteOffset) as ExecRequest | undefined;
  try {
    request ??= decodeBinary(ExecRequestSchema, call.payload);
  } catch {
    return undefined;
  }
  const started = Date.now();
  const headers = { "content-type": call.contentType };
  const fields: LogFields = {};
  const fail = (e: unknown) => {
    const err = classifyFault(e, caller.requestId, "Exec");
    logRpc({
      requestId: caller.requestId,
      tenant: caller.tenant,
      session: fields.session ?? "",
      operation: "Exec",
      code: err.code,
      durationMs: Date.now() - started,
    });
    return new Response(streamEndOf(call.ending, err), { status: 200, headers });
  };

  const bad = numberViolation(ExecRequestSchema, request);
  if (bad) return fail(new ConnectError(`${bad}; nothing was done`, Code.InvalidArgument));
  const values = createContextValues();
  values.set(callerKey, caller);
  values.set(logFieldsKey, fields);
  let start: FrameStart;
  try {
    start = await openExecWhole(env, harnesses, limits, { values } as HandlerContext, request, call.payload, { ending: call.ending, startedMs: started });
  } catch (e) {
    return fail(e);
  }
  // The object wrote the answer in the caller's protocol, its ending and its request line
  // included (objects/exec-frames.ts): a turn that never waited comes whole, anything else as a
  // stream that workerd pumps to the caller without this isolate touching a chunk.
  if ("whole" in start) return new Response(start.whole, { status: 200, headers });
  return new Response(start.frames, { status: 200, headers });
}
