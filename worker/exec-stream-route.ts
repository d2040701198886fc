/**
 * Exec in a binary encoding, relayed without the router's streaming machinery: the session
 * object's update frames (objects/exec-frames.ts) are forwarded as they arrive, byte for byte:
 * an update frame is laid out as a Connect / gRPC-Web data envelope. The object's failure frame
 * becomes the stream's error ending, its end frame the OK ending, and a stream that stops
 * mid-frame ends UNAVAILABLE. An answer that the object gave whole (a turn that never waited,
 * such as an echo turn: objects/exec-frames.ts `FrameStart`), or that fits the stream's first
 * chunk, goes as one body of known length; anything longer streams.
 * Connect-es would decode nothing here either (binary passthrough), but it pipes each message
 * through several async generators; this is the turn's hot path.
 *
 * Like the Replay fast path (record-stream-route.ts), it serves only one plain binary envelope
 * without a deadline header, after rpc-entry.ts authenticated, authorized, rate-limited and
 * checked the request; anything else goes to the router. The checks before the stream are the
 * router's own (sessions-service.ts openExec), so both refuse in the same words; a non-Connect
 * error is INTERNAL with a fault line, as classifyFaults makes it. One `rpc` line, with the
 * first message's time, as the request log writes it. Tested against the router's answers in
 * test/node/integration/stream-routes.test.ts.
 */
import { decodeBinary } from "../proto/binary-reader.js";
import { Code, ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import type { HostLimits } from "../objects/config.js";
import { type Env, FrameDecoder } from "../objects/index.js";
import type { FrameStart } from "../objects/exec-frames.js";
import { type ExecRequest, ExecRequestSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { numberViolation } from "../proto/numbers.js";
import type { HarnessResolver } from "../runtimes/builtin/index.js";
import { type Caller, callerKey, type LogFields, logFieldsKey } from "./context.js";
import { connectErrorFrom } from "./errors.js";
import { classifyFault } from "./faults.js";
import { concatBytes } from "../proto/bytes.js";
import { binaryStreamCall, streamEndOf } from "./record-stream-route.js";
import type { DecodedMessages } from "./request-check.js";
import { logRpc } from "./request-log.js";
import { EXEC_CUT_SHORT, openExecWhole } from "./sessions-service.js";

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
  let firstMessageMs: number | undefined;
  const log = (code: Code | undefined) =>
    logRpc({
      requestId: caller.requestId,
      tenant: caller.tenant,
      session: fields.session ?? "",
      operation: "Exec",
      code,
      durationMs: Date.now() - started,
      firstMessageMs,
    });
  const fail = (e: unknown) => {
    const err = classifyFault(e, caller.requestId, "Exec");
    log(err.code);
    return new Response(streamEndOf(call.ending, err), { status: 200, headers });
  };

  const bad = numberViolation(ExecRequestSchema, request);
  if (bad) return fail(new ConnectError(`${bad}; nothing was done`, Code.InvalidArgument));
  const values = createContextValues();
  values.set(callerKey, caller);
  values.set(logFieldsKey, fields);
  let start: FrameStart;
  try {
    start = await openExecWhole(env, harnesses, limits, { values } as HandlerContext, request, call.payload);
  } catch (e) {
    return fail(e);
  }
  const decoder = new FrameDecoder();
  if ("whole" in start) {
    // A turn that never waited (an echo turn): the object answered with all of it, no stream.
    const { envelopes, failure, ended } = decoder.relay(start.whole);
    if (envelopes) firstMessageMs = Date.now() - started;
    const e = ended ? undefined : failure ? connectErrorFrom(failure) : new ConnectError(EXEC_CUT_SHORT, Code.Unavailable);
    const ending = streamEndOf(call.ending, e);
    log(e?.code);
    return new Response(envelopes ? concatBytes([envelopes, ending]) : ending, { status: 200, headers });
  }

  const reader = start.frames.getReader();
  /** The stream's end in the caller's protocol after `before` (the last envelopes), and its log line. */
  const finish = (e?: ConnectError, before?: Uint8Array): Piece => {
    const ending = streamEndOf(call.ending, e);
    log(e?.code);
    void reader.cancel().catch(() => undefined);
    return { bytes: before ? concatBytes([before, ending]) : ending, last: true };
  };
  /** The next bytes to send: read until a chunk yields some (a chunk may hold part of a frame only). */
  const next = async (): Promise<Piece> => {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch {
        return finish(new ConnectError(EXEC_CUT_SHORT, Code.Unavailable));
      }
      if (chunk.done) return finish(decoder.drained ? undefined : new ConnectError(EXEC_CUT_SHORT, Code.Unavailable));
      const { envelopes, failure, ended } = decoder.relay(chunk.value);
      if (envelopes) firstMessageMs ??= Date.now() - started;
      if (ended) return finish(undefined, envelopes);
      if (failure) return finish(connectErrorFrom(failure), envelopes);
      if (envelopes) return { bytes: envelopes, last: false };
    }
  };

  // A turn that never waited (an echo turn) sends its whole answer in the object's first chunk:
  // it goes as one body of known length, without a stream to relay it.
  const first = await next();
  if (first.last) return new Response(first.bytes, { status: 200, headers });
  let done = false;
  const stream = new ReadableStream<Uint8Array>({
    start(ctl) {
      ctl.enqueue(first.bytes);
    },
    async pull(ctl) {
      const piece = await next();
      ctl.enqueue(piece.bytes);
      if (!piece.last) return;
      done = true;
      ctl.close();
    },
    cancel(reason) {
      if (done) return;
      done = true;
      log(Code.Canceled);
      return reader.cancel(reason);
    },
  });
  return new Response(stream, { status: 200, headers });
}

/** Bytes of the response, and whether they end it. */
interface Piece {
  bytes: Uint8Array;
  last: boolean;
}
