/**
 * Server streams read straight off the wire: one binary Connect streaming request, its response
 * read as envelopes and each message decoded by the compiled decoder (proto/binary-reader.ts), the
 * host's end-of-stream error raised as the same ConnectError connect-es would raise. Replay (a
 * journal is the largest thing a client reads), Exec (the turn, the client's hot path) and Tail (a
 * process that follows many sessions) go this way: connect-es's generic stream (several async
 * generators and a reflective decode per message) was most of `agentctl verify`'s time, and half
 * the client's CPU in a turn.
 *
 * @internal Used by SessionsClient.replay, exec and tail when the client speaks binary; tested in
 * test/node/sdk/server-stream.test.ts against the connect-es client's answers.
 */
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeFromHttpStatus, codeFromString } from "@connectrpc/connect/protocol-connect";
import { decodeBinary } from "../proto/binary-reader.js";
import { encodeBinary } from "../proto/binary-writer.js";
import { concatBytes } from "../proto/bytes.js";
import { LogRecordSchema, type LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { type ExecRequest, ExecRequestSchema, type ExecUpdate, ExecUpdateSchema, ReplayRequestSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { TailRequestSchema, type TailResponse, TailResponseSchema } from "../proto/gen/agentsessions/edge/v1/tail_pb.js";

export interface StreamWire {
  baseUrl: string;
  token?: string;
  fetch: typeof globalThis.fetch;
  /** A cheaper call than `fetch` for these streams, when the fetch given has one (STREAM_CALL). */
  stream?: StreamCall;
}

/** What reading a stream needs of an answer: a `Response` is one. */
export interface StreamAnswer {
  status: number;
  body: StreamBody | null;
  text(): Promise<string>;
}

/**
 * What reading a stream needs of a body: a `ReadableStream` is one, and so is sdk/node's lighter
 * queue over the socket (a web stream in Node costs more CPU than the read of a turn's answer).
 */
export interface StreamBody {
  getReader(): { read(): Promise<ReadableStreamReadResult<Uint8Array>>; cancel(reason?: unknown): Promise<void> };
}

/** A POST of a stream request, answered without building a `Response`. */
export type StreamCall = (url: string, init: { headers: Record<string, string>; body: Uint8Array; signal?: AbortSignal }) => Promise<StreamAnswer>;

/**
 * Where a fetch function keeps its StreamCall (sdk/node's `nodeFetch` has one): Node loads its
 * whole fetch implementation (undici) the first time a `Headers` or `Response` is made, about
 * 30 ms on these machines, which a Replay read this way never needs (`agentctl verify` ran about
 * 20 ms faster without it).
 */
export const STREAM_CALL = Symbol.for("agentsessions.sdk.streamCall");

const REPLAY_RECOVER = "Replay again from the seq after the last record received";

/** The streams read this way, and where each is served. */
type StreamMethod = "Replay" | "Exec" | "Tail";
const PATHS: Record<StreamMethod, string> = {
  Replay: "agentsessions.v1.Sessions/Replay",
  Exec: "agentsessions.v1.Sessions/Exec",
  Tail: "agentsessions.edge.v1.Tail/Tail",
};

export function replayRecords(wire: StreamWire, req: { session: string; fromSeq: bigint; toSeq: bigint }, signal?: AbortSignal): AsyncGenerator<LogRecord> {
  const message = encodeBinary(ReplayRequestSchema, create(ReplayRequestSchema, req));
  return serverStream(wire, "Replay", message, LogRecordSchema, signal, REPLAY_RECOVER);
}

export function execUpdates(wire: StreamWire, req: ExecRequest, signal?: AbortSignal): AsyncGenerator<ExecUpdate> {
  return serverStream(wire, "Exec", encodeBinary(ExecRequestSchema, req), ExecUpdateSchema, signal, "read the session to see how far the turn got");
}

/** One Tail stream's items (sdk/tail.ts reopens it when it breaks off). */
export function tailResponses(
  wire: StreamWire,
  req: { session: string; fromSeq: bigint; follow: boolean },
  signal?: AbortSignal,
): AsyncGenerator<TailResponse> {
  const message = encodeBinary(TailRequestSchema, create(TailRequestSchema, req));
  return serverStream(wire, "Tail", message, TailResponseSchema, signal, "Tail again from the seq after the last record received");
}

/**
 * Replay's records as the host encoded them, a batch per chunk read: for a reader that takes the
 * bytes apart itself (`agentctl verify`, cli/commands/verify.ts).
 */
export function replayEncoded(wire: StreamWire, req: { session: string; fromSeq: bigint; toSeq: bigint }, signal?: AbortSignal): AsyncGenerator<Uint8Array[]> {
  const message = encodeBinary(ReplayRequestSchema, create(ReplayRequestSchema, req));
  return streamFrames(wire, "Replay", message, signal, REPLAY_RECOVER);
}

/** One server stream's responses, decoded one by one. */
async function* serverStream<Desc extends DescMessage>(
  wire: StreamWire,
  method: StreamMethod,
  message: Uint8Array,
  schema: Desc,
  signal: AbortSignal | undefined,
  recover: string,
): AsyncGenerator<MessageShape<Desc>> {
  for await (const batch of streamFrames(wire, method, message, signal, recover)) {
    for (const payload of batch) yield decodeBinary(schema, payload);
  }
}

/**
 * One server stream: `method`'s request message in, its responses' bytes out, every
 * whole frame of a chunk in one batch. `recover` tells the caller what to do when the stream ends
 * without its end frame (a connection cut short).
 */
async function* streamFrames(
  wire: StreamWire,
  method: StreamMethod,
  message: Uint8Array,
  signal: AbortSignal | undefined,
  recover: string,
): AsyncGenerator<Uint8Array[]> {
  const body = new Uint8Array(5 + message.length);
  new DataView(body.buffer).setUint32(1, message.length);
  body.set(message, 5);
  const headers: Record<string, string> = { "content-type": "application/connect+proto", "connect-protocol-version": "1" };
  if (wire.token) headers.authorization = `Bearer ${wire.token}`;
  const url = `${wire.baseUrl}/${PATHS[method]}`;
  let res: StreamAnswer;
  try {
    res = wire.stream
      ? await wire.stream(url, { headers, body, signal })
      : await wire.fetch(url, { method: "POST", headers, body, signal, redirect: "manual" });
  } catch (e) {
    throw signal?.aborted
      ? new ConnectError(`the ${method} was canceled`, Code.Canceled)
      : new ConnectError(`${method} failed to connect: ${(e as Error).message}`, Code.Unavailable, undefined, undefined, e);
  }
  if (res.status !== 200 || !res.body) throw await httpError(res);
  const reader = res.body.getReader();
  let buf: Uint8Array = new Uint8Array(0);
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        throw signal?.aborted
          ? new ConnectError(`the ${method} was canceled`, Code.Canceled)
          : new ConnectError(`the ${method} stream broke off: ${(e as Error).message}`, Code.Unavailable);
      }
      if (chunk.done) throw new ConnectError(`the ${method} stream ended without its end frame: ${recover}`, Code.Unavailable);
      buf = buf.length === 0 ? chunk.value : concatBytes([buf, chunk.value]);
      const batch: Uint8Array[] = [];
      let at = 0;
      while (at + 5 <= buf.length) {
        const flags = buf[at]!;
        const len = new DataView(buf.buffer, buf.byteOffset + at + 1, 4).getUint32(0);
        if (at + 5 + len > buf.length) break;
        const payload = buf.subarray(at + 5, at + 5 + len);
        at += 5 + len;
        if (flags & 0x02) {
          if (batch.length > 0) yield batch;
          endOfStream(method, payload);
          return;
        }
        if (flags & 0x01) throw new ConnectError("the host sent a compressed message this client did not ask for", Code.Internal);
        batch.push(payload);
      }
      buf = buf.subarray(at);
      if (batch.length > 0) yield batch;
    }
  } finally {
    void reader.cancel().catch(() => undefined);
  }
}

/** The Connect end-stream frame: nothing, or the error it carries. */
function endOfStream(method: string, payload: Uint8Array): void {
  let end: { error?: { code?: string; message?: string } };
  try {
    end = JSON.parse(new TextDecoder().decode(payload)) as typeof end;
  } catch {
    throw new ConnectError(`the ${method}'s end frame is not JSON`, Code.Internal);
  }
  if (end.error) throw new ConnectError(end.error.message ?? "", codeFromString(end.error.code ?? "") ?? Code.Unknown);
}

/**
 * An answer that is not a stream: the Connect error in its JSON body (the host's own refusals
 * carry one), or else the error connect-es gives for the HTTP status, in its words ("HTTP 503",
 * UNAVAILABLE), so callers that retry on it behave alike on both paths.
 */
export async function httpError(res: StreamAnswer): Promise<ConnectError> {
  const text = await res.text().catch(() => "");
  try {
    const j = JSON.parse(text) as { code?: string; message?: string };
    const code = j.code ? codeFromString(j.code) : undefined;
    if (code !== undefined) return new ConnectError(j.message ?? "", code);
  } catch {
    // not JSON
  }
  return new ConnectError(`HTTP ${res.status}`, codeFromHttpStatus(res.status));
}
