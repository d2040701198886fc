/**
 * Replay in a binary encoding, served as the session object's own byte stream (issue 12: "serve
 * stored records without decoding them ... write many envelopes per chunk"): the object writes
 * every LogRecord straight into Connect / gRPC-Web envelopes, many per chunk
 * (objects/session/record-stream.ts), and the Worker relays the chunks and appends the end of the
 * stream, touching no record. Connect streaming and gRPC-Web share the envelope; only the ending
 * differs (an end-stream frame, a trailer frame).
 *
 * A narrow fast path in front of the router (worker/rpc-entry.ts calls it after authentication,
 * the size limit and request-check): anything it does not recognise as a plain binary Replay (JSON,
 * compression, more than one envelope) goes to the router, which serves every Replay the same way
 * with decoded messages. Both refuse in the same words; test/node/integration/stream-routes.test.ts
 * compares their answers.
 */
import { decodeBinary } from "../proto/binary-reader.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { type Env, sessionStub } from "../objects/index.js";
import { ReplayRequestSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { numberViolation } from "../proto/numbers.js";
import { connectEndFrame, grpcWebTrailerFrame } from "../proto/record-envelopes.js";
import { connectErrorFrom } from "./errors.js";
import { logRpc } from "./request-log.js";
import { requireUid } from "./sessions-service.js";

export type Ending = "connect" | "grpc-web";

export interface StreamCaller {
  tenant: string;
  requestId: string;
}

/** A request that is one plain binary envelope of Connect streaming or gRPC-Web, else undefined. */
export interface BinaryStreamCall {
  ending: Ending;
  contentType: string;
  payload: Uint8Array;
}

/**
 * The fast paths' shared front: exactly one uncompressed binary envelope, no deadline header
 * (the router applies deadlines); anything else is the router's to judge and serve.
 */
export function binaryStreamCall(req: Request, body: Uint8Array): BinaryStreamCall | undefined {
  const ct = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const ending: Ending | undefined =
    ct === "application/connect+proto" ? "connect" : ct === "application/grpc-web+proto" || ct === "application/grpc-web" ? "grpc-web" : undefined;
  if (!ending) return undefined;
  const encoding = req.headers.get(ending === "connect" ? "connect-content-encoding" : "grpc-encoding");
  if (encoding && encoding !== "identity") return undefined;
  if (req.headers.has(ending === "connect" ? "connect-timeout-ms" : "grpc-timeout")) return undefined;
  if (body.length < 5 || body[0] !== 0) return undefined;
  const len = new DataView(body.buffer, body.byteOffset + 1, 4).getUint32(0);
  if (5 + len !== body.length) return undefined;
  return { ending, contentType: ct, payload: body.subarray(5) };
}

/** The end of a stream in the caller's protocol: OK, or the error. */
export function streamEnd(ending: Ending, e?: ConnectError): Uint8Array {
  if (ending === "connect") return e ? connectEndFrame({ code: codeToString(e.code), message: e.rawMessage }) : connectEndFrame();
  return e ? grpcWebTrailerFrame(e.code, e.rawMessage) : grpcWebTrailerFrame(0);
}

/** The Replay answer, or undefined when the router should serve this request. */
export async function serveBinaryReplay(env: Env, req: Request, body: Uint8Array, caller: StreamCaller): Promise<Response | undefined> {
  const call = binaryStreamCall(req, body);
  if (!call) return undefined;
  const { ending, contentType: ct } = call;
  let request;
  try {
    request = decodeBinary(ReplayRequestSchema, call.payload);
  } catch {
    return undefined;
  }

  const started = Date.now();
  let session = "";
  const headers = { "content-type": ct };
  const log = (code: Code | undefined) =>
    logRpc({ requestId: caller.requestId, tenant: caller.tenant, session, operation: "Replay", code, durationMs: Date.now() - started });
  const fail = (e: ConnectError) => {
    log(e.code);
    return new Response(streamEnd(ending, e), { status: 200, headers });
  };

  const bad = numberViolation(ReplayRequestSchema, request);
  if (bad) return fail(new ConnectError(`${bad}; nothing was done`, Code.InvalidArgument));
  try {
    session = requireUid(request.session, "session");
  } catch (e) {
    return fail(ConnectError.from(e));
  }
  const r = await sessionStub(env, caller.tenant, session).replay(request.fromSeq, request.toSeq);
  if (!r.ok) return fail(connectErrorFrom(r));
  // The object's chunks as they come, then the end of the stream: an error ending when the object's
  // stream broke off (its session erased mid-Replay, say), so the caller never sees a silent cut.
  const reader = r.value.getReader();
  const stream = new ReadableStream<Uint8Array>({
    async pull(ctl) {
      try {
        const { done, value } = await reader.read();
        if (!done) return ctl.enqueue(value);
        ctl.enqueue(streamEnd(ending));
        log(undefined);
      } catch {
        const e = new ConnectError("the journal could not be read to its end: Replay again from the seq after the last record you received", Code.Unavailable);
        ctl.enqueue(streamEnd(ending, e));
        log(e.code);
      }
      ctl.close();
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(stream, { status: 200, headers });
}
