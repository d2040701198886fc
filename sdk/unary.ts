/**
 * Unary calls read straight off the wire: one binary Connect request, its whole answer decoded by
 * the compiled decoder (proto/binary-reader.ts), a refusal raised as the ConnectError connect-es
 * would raise. CreateSession, GetSession, ListSessions, Suspend, Resume, Cancel and DeleteSession go this way: a UI or a script
 * that polls a session makes many of them, and through connect-es's unary client (an interceptor
 * chain, a `Request` and `Headers` made per call, a reflective decode) a GetSession took 0.57-0.74
 * ms longer, side by side (docs/performance.md, "Thirty-second round").
 *
 * @internal Used by SessionsClient when the client speaks binary; tested in
 * test/node/sdk/unary.test.ts against the connect-es client's answers.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { decodeBinary } from "../proto/binary-reader.js";
import { concatBytes } from "../proto/bytes.js";
import { httpError, type StreamAnswer, type StreamWire } from "./server-stream.js";

/**
 * `path` (Service/Method) called with the encoded request `message`; its answer as `schema`.
 * `what` names the call in errors ("GetSession").
 */
export async function unaryCall<Desc extends DescMessage>(
  wire: StreamWire,
  path: string,
  what: string,
  message: Uint8Array,
  schema: Desc,
  signal?: AbortSignal,
): Promise<MessageShape<Desc>> {
  const headers: Record<string, string> = { "content-type": "application/proto", "connect-protocol-version": "1" };
  if (wire.token) headers.authorization = `Bearer ${wire.token}`;
  const url = `${wire.baseUrl}/${path}`;
  let res: StreamAnswer;
  try {
    res = wire.stream
      ? await wire.stream(url, { headers, body: message, signal })
      : await wire.fetch(url, { method: "POST", headers, body: message as Uint8Array<ArrayBuffer>, signal, redirect: "manual" });
  } catch (e) {
    throw broken(what, e, signal);
  }
  if (res.status !== 200 || !res.body) throw await httpError(res);
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  try {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      parts.push(chunk.value);
    }
  } catch (e) {
    throw broken(what, e, signal);
  }
  const bytes = parts.length === 1 ? parts[0]! : concatBytes(parts);
  try {
    return decodeBinary(schema, bytes);
  } catch (e) {
    throw new ConnectError(`the ${what} answer is not a valid ${schema.typeName}: ${(e as Error).message}`, Code.Internal);
  }
}

/**
 * A call that did not get its whole answer: CANCELED when the caller's signal ended it, else the
 * error connect-es's unary client raises for it (UNKNOWN "fetch failed" for a refused connection).
 * The same code matters: the SDK asks a session again on UNAVAILABLE only (an HTTP 503, a host
 * restarting behind its proxy: SessionsClient.exec re-attaching), not when nothing answers.
 */
function broken(what: string, e: unknown, signal: AbortSignal | undefined): ConnectError {
  return signal?.aborted ? new ConnectError(`the ${what} was canceled`, Code.Canceled) : ConnectError.from(e);
}
