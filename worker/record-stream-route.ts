/**
 * Replay and Tail in a binary encoding, served as the session object's own byte stream (issue 12: "serve
 * stored records without decoding them ... write many envelopes per chunk"): the object writes
 * every LogRecord straight into Connect / gRPC-Web envelopes, many per chunk, and the stream's
 * ending last (objects/session/record-stream.ts); the Worker hands that stream to the caller as it
 * is, so workerd pumps it without this isolate touching a chunk. Connect streaming and gRPC-Web
 * share the envelope; only the ending differs (an end-stream frame, a trailer frame). A Tail's
 * follower writes its items the same way, and the ending after its end item
 * (objects/session/followers.ts): a follow is relayed chunk by chunk by workerd, not message by
 * message through connect-es, which matters with many followers (docs/performance.md).
 *
 * A narrow fast path in front of the router (worker/rpc-entry.ts calls it after authentication,
 * the size limit and request-check): anything it does not recognise as a plain binary Replay or
 * Tail (JSON, compression, more than one envelope, a deadline) goes to the router, which serves
 * them the same way with decoded messages (worker/tail-service.ts for Tail). Both refuse in the same words; test/node/integration/stream-routes.test.ts
 * compares their answers.
 */
import { decodeBinary } from "../proto/binary-reader.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Env, sessionStub } from "../objects/index.js";
import { ReplayRequestSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { TailRequestSchema } from "../proto/gen/agentsessions/edge/v1/tail_pb.js";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { numberViolation } from "../proto/numbers.js";
import { type Ending, streamEnd } from "../proto/record-envelopes.js";
import { connectErrorFrom } from "./errors.js";
import { logRpc } from "./request-log.js";
import { requireUid } from "./sessions-service.js";
import type { Outcome } from "../objects/session/outcomes.js";

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
export function streamEndOf(ending: Ending, e?: ConnectError): Uint8Array {
  return streamEnd(ending, e && { code: e.code, message: e.rawMessage });
}

/** The Replay answer, or undefined when the router should serve this request. */
export function serveBinaryReplay(env: Env, req: Request, body: Uint8Array, caller: StreamCaller): Promise<Response | undefined> {
  return serveObjectStream(req, body, caller, "Replay", ReplayRequestSchema, (r, session, ending) =>
    sessionStub(env, caller.tenant, session).replay(r.fromSeq, r.toSeq, ending),
  );
}

/**
 * The Tail answer, or undefined when the router should serve this request. A follower the object
 * ends on purpose (at the head, idle, too slow, the session deleted) ends with its end item and
 * then the OK ending; a stream cut off with its object (a restart, a deploy) ends without one, which
 * a client reads as a broken stream and Tails again from the seq after its last record (sdk/tail.ts).
 * A caller that goes away cancels the stream, and with it the object's follower.
 */
export function serveBinaryTail(env: Env, req: Request, body: Uint8Array, caller: StreamCaller): Promise<Response | undefined> {
  return serveObjectStream(req, body, caller, "Tail", TailRequestSchema, (r, session, ending) =>
    sessionStub(env, caller.tenant, session).tail(r.fromSeq, r.follow, ending),
  );
}

/** The request's session object's stream as the whole answer, after the router's own checks. */
async function serveObjectStream<Desc extends DescMessage>(
  req: Request,
  body: Uint8Array,
  caller: StreamCaller,
  operation: string,
  schema: Desc,
  open: (request: MessageShape<Desc> & { session: string }, session: string, ending: Ending) => Promise<Outcome<ReadableStream<Uint8Array>>>,
): Promise<Response | undefined> {
  const call = binaryStreamCall(req, body);
  if (!call) return undefined;
  const { ending, contentType: ct } = call;
  let request;
  try {
    request = decodeBinary(schema, call.payload) as MessageShape<Desc> & { session: string };
  } catch {
    return undefined;
  }

  const started = Date.now();
  let session = "";
  const headers = { "content-type": ct };
  const log = (code: Code | undefined) =>
    logRpc({ requestId: caller.requestId, tenant: caller.tenant, session, operation, code, durationMs: Date.now() - started });
  const fail = (e: ConnectError) => {
    log(e.code);
    return new Response(streamEndOf(ending, e), { status: 200, headers });
  };

  const bad = numberViolation(schema, request);
  if (bad) return fail(new ConnectError(`${bad}; nothing was done`, Code.InvalidArgument));
  try {
    session = requireUid(request.session, "session");
  } catch (e) {
    return fail(ConnectError.from(e));
  }
  const r = await open(request, session, ending);
  if (!r.ok) return fail(connectErrorFrom(r));
  // The object's stream is the whole answer, its ending included: workerd pumps it to the caller
  // without this isolate touching a chunk. The line is written as the answer starts; an object cut
  // off mid-stream leaves the body without its ending, which a client reads as a broken stream,
  // never as a complete one.
  log(undefined);
  return new Response(r.value, { status: 200, headers });
}
