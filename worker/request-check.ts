/**
 * Refuses, before the Connect router sees it, a request whose body is malformed in a way the
 * router would answer as INTERNAL: a binary message that does not decode (truncated, a bad varint
 * or wire type, nested past the recursion limit) and an envelope flagged compressed when no
 * encoding was negotiated. connect-es blames the server for both, while the same mistake in JSON
 * is INVALID_ARGUMENT; docs/behaviour.md §4.12 makes a malformed request INVALID_ARGUMENT, and every
 * INTERNAL is logged at error level, so any client could fill the error log (found by
 * test/node/fuzz). The answer is in the caller's protocol: Connect unary, Connect streaming,
 * gRPC or gRPC-Web. Anything else about the request is left to the router.
 *
 * Plain gRPC is refused here too, UNIMPLEMENTED: its status travels in HTTP trailers, which a
 * Worker cannot send, so a stream would end with no status at all (docs/design.md: clients speak
 * Connect or gRPC-Web). The refusal itself is trailers-only, which gRPC clients do read.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { decodeBinary } from "../proto/binary-reader.js";
import { Code } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import { jsonNumberFormViolation, parseJsonKeepingNumberForms } from "../proto/numbers.js";

type Protocol = "connect-unary" | "connect-stream" | "grpc" | "grpc-web";

interface Framing {
  protocol: Protocol;
  binary: boolean;
  /** The header that names the request's compression. */
  encodingHeader: string;
}

/** The protocol a content type selects for `method`, or undefined when the router should decide. */
function framingOf(method: DescMethod, contentType: string): Framing | undefined {
  const ct = contentType.split(";")[0]!.trim().toLowerCase();
  const unary = method.methodKind === "unary";
  if (ct === "application/proto") return unary ? { protocol: "connect-unary", binary: true, encodingHeader: "content-encoding" } : undefined;
  if (ct === "application/json") return unary ? { protocol: "connect-unary", binary: false, encodingHeader: "content-encoding" } : undefined;
  if (ct === "application/connect+proto" || ct === "application/connect+json") {
    return unary ? undefined : { protocol: "connect-stream", binary: ct.endsWith("proto"), encodingHeader: "connect-content-encoding" };
  }
  if (ct === "application/grpc" || ct === "application/grpc+proto") return { protocol: "grpc", binary: true, encodingHeader: "grpc-encoding" };
  if (ct === "application/grpc+json") return { protocol: "grpc", binary: false, encodingHeader: "grpc-encoding" };
  if (ct === "application/grpc-web" || ct === "application/grpc-web+proto") return { protocol: "grpc-web", binary: true, encodingHeader: "grpc-encoding" };
  if (ct === "application/grpc-web+json") return { protocol: "grpc-web", binary: false, encodingHeader: "grpc-encoding" };
  return undefined;
}

/**
 * Each binary message the check decoded, by where its payload starts in the body: a fast path
 * that serves the request takes it from here rather than decoding the same bytes again
 * (exec-stream-route.ts).
 */
export type DecodedMessages = Map<number, unknown>;

/** Why the body cannot be what `method` takes, or undefined when the router should read it. */
function problemOf(method: DescMethod, f: Framing, headers: Headers, body: Uint8Array, decoded?: DecodedMessages): string | undefined {
  const input = method.input.typeName;
  const decodes = (bytes: Uint8Array): string | undefined => {
    try {
      const message = decodeBinary(method.input, bytes);
      decoded?.set(bytes.byteOffset - body.byteOffset, message);
      return undefined;
    } catch (e) {
      return `the request body is not a valid binary ${input}: ${(e as Error).message}; send a well-formed protobuf message (or use JSON)`;
    }
  };
  // JSON that parses is the router's to judge, but for integers written in forms the contract
  // does not define, to which the parser would give a value (proto/numbers.ts).
  const jsonForms = (bytes: Uint8Array): string | undefined => {
    let json: unknown;
    try {
      json = parseJsonKeepingNumberForms(new TextDecoder().decode(bytes));
    } catch {
      return undefined;
    }
    const bad = jsonNumberFormViolation(method.input, json);
    return bad && `${bad}; nothing was done`;
  };
  if (f.protocol === "connect-unary") {
    const encoding = headers.get(f.encodingHeader);
    if (encoding && encoding !== "identity") return undefined;
    return f.binary ? decodes(body) : jsonForms(body);
  }
  const encoding = headers.get(f.encodingHeader);
  const negotiated = encoding !== null && encoding !== "identity";
  // Whole envelopes only: a truncated frame is the router's to refuse, and it does so in kind.
  for (let at = 0; at + 5 <= body.length; ) {
    const flags = body[at]!;
    const length = new DataView(body.buffer, body.byteOffset + at + 1, 4).getUint32(0);
    if (at + 5 + length > body.length) break;
    const payload = body.subarray(at + 5, at + 5 + length);
    at += 5 + length;
    if (flags & 0x01) {
      if (negotiated) continue;
      return `a request message is flagged compressed, but no ${f.encodingHeader} was sent; send it uncompressed or name its encoding`;
    }
    // A Connect end-stream frame (0x02) carries JSON; the router rejects it where it does not belong.
    if (f.protocol === "connect-stream" && flags & 0x02) continue;
    const bad = f.binary ? decodes(payload) : jsonForms(payload);
    if (bad) return bad;
  }
  return undefined;
}

export interface Refused {
  code: Code;
  response: Response;
}

/** The answer for a request the router would call INTERNAL (or cannot serve), or undefined. */
export function refuseMalformed(method: DescMethod, req: Request, body: Uint8Array, decoded?: DecodedMessages): Refused | undefined {
  if (req.method === "GET") return refuseMalformedGet(method, req);
  if (req.method !== "POST") return undefined;
  const contentType = req.headers.get("content-type") ?? "";
  const f = framingOf(method, contentType);
  if (!f) return undefined;
  if (f.protocol === "grpc") {
    const message =
      "plain gRPC is not served: Workers cannot send the HTTP trailers that carry its status; use gRPC-Web (application/grpc-web+proto) or Connect";
    return { code: Code.Unimplemented, response: errorBody(f, contentType, Code.Unimplemented, message) };
  }
  const message = problemOf(method, f, req.headers, body, decoded);
  if (message === undefined) return undefined;
  return { code: Code.InvalidArgument, response: errorBody(f, contentType, Code.InvalidArgument, message) };
}

/**
 * A refusal of `req` in the protocol its content type selects for `method` (Connect unary JSON
 * when it selects none), for answers given before the router reads the request: authentication
 * and the request size limit (worker/rpc-entry.ts).
 */
export function refusalFor(method: DescMethod, req: Request, code: Code, message: string): Response {
  const contentType = req.headers.get("content-type") ?? "";
  const f = framingOf(method, contentType) ?? { protocol: "connect-unary", binary: false, encodingHeader: "content-encoding" };
  return errorBody(f, contentType, code, message, true);
}

/**
 * A Connect GET (read-only methods, proto/agentsessions/v1/session.proto) carries its message in
 * the query: `encoding=proto` with `base64=1` is binary the router would also call INTERNAL when
 * it does not decode. JSON and the rest of the query are the router's to judge.
 */
function refuseMalformedGet(method: DescMethod, req: Request): Refused | undefined {
  const q = new URL(req.url).searchParams;
  if (q.get("encoding") !== "proto" || !q.has("message") || q.get("compression")) return undefined;
  const f: Framing = { protocol: "connect-unary", binary: true, encodingHeader: "" };
  const refuse = (message: string): Refused => ({ code: Code.InvalidArgument, response: errorBody(f, "application/proto", Code.InvalidArgument, message) });
  const raw = q.get("message")!;
  let bytes: Uint8Array;
  if (q.get("base64") === "1") {
    if (!/^[A-Za-z0-9_=-]*$/.test(raw))
      return refuse("the message query parameter is not base64url; encode the binary message with base64url (or use encoding=json)");
    const b64 = raw.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
    try {
      bytes = Uint8Array.from(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0));
    } catch {
      return refuse("the message query parameter is not base64url; encode the binary message with base64url (or use encoding=json)");
    }
  } else {
    bytes = new Uint8Array([...raw].map((c) => c.charCodeAt(0) & 0xff));
  }
  try {
    decodeBinary(method.input, bytes);
    return undefined;
  } catch (e) {
    return refuse(
      `the message query parameter is not a valid binary ${method.input.typeName}: ${(e as Error).message}; send a well-formed protobuf message (or use encoding=json)`,
    );
  }
}

/** `unread`: the request's body is not read (a refusal before it), so no answer may be bodyless. */
function errorBody(f: Framing, contentType: string, code: Code, message: string, unread = false): Response {
  switch (f.protocol) {
    case "connect-unary":
      return Response.json({ code: codeToString(code), message }, { status: codeToHttpStatus(code) });
    case "connect-stream": {
      const end = new TextEncoder().encode(JSON.stringify({ error: { code: codeToString(code), message } }));
      const frame = new Uint8Array(5 + end.length);
      frame[0] = 0x02;
      new DataView(frame.buffer).setUint32(1, end.length);
      frame.set(end, 5);
      return new Response(frame, { status: 200, headers: { "content-type": contentType } });
    }
    case "grpc-web": {
      if (!unread) return trailersOnly(contentType, code, message);
      // The status as a trailer frame in the body (flag 0x80), not trailers-only headers: workerd
      // holds back a bodyless answer until the request's unread body has arrived in full.
      const trailer = new TextEncoder().encode(`grpc-status: ${code}\r\ngrpc-message: ${encodeURIComponent(message)}\r\n`);
      const frame = new Uint8Array(5 + trailer.length);
      frame[0] = 0x80;
      new DataView(frame.buffer).setUint32(1, trailer.length);
      frame.set(trailer, 5);
      return new Response(frame, { status: 200, headers: { "content-type": contentType } });
    }
    case "grpc":
      // Plain gRPC carries its status in HTTP trailers, which a Worker cannot send.
      return trailersOnly(contentType, code, message);
  }
}

/** A gRPC answer whose status travels in its headers, which both gRPC and gRPC-Web allow. */
function trailersOnly(contentType: string, code: Code, message: string): Response {
  return new Response(null, {
    status: 200,
    headers: { "content-type": contentType, "grpc-status": String(code), "grpc-message": encodeURIComponent(message) },
  });
}
