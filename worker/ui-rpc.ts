/**
 * The inspector's Connect client, as page JS: unary calls with the JSON codec and server streams
 * with `application/connect+json` envelopes (1 flag byte, 4-byte big-endian length, JSON; flag 0x02
 * marks the end-of-stream frame that carries `{}` or `{"error": …}`). Inlined by ui-page.ts.
 * Written without backticks or "${" because it lives inside a template literal.
 * @internal
 */
export const UI_RPC_JS = String.raw`
const RPC_BASE = "/agentsessions.v1.Sessions/";
const END_STREAM = 0x02;
const COMPRESSED = 0x01;

// A Connect error as the server reported it: code is the wire code ("not_found", …).
class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// Connect's mapping for responses that carry no error body (e.g. a proxy's 502).
function codeFromHttpStatus(status) {
  const table = { 400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied", 404: "unimplemented",
    408: "deadline_exceeded", 409: "aborted", 412: "failed_precondition", 413: "resource_exhausted",
    415: "internal", 429: "unavailable", 431: "resource_exhausted", 502: "unavailable",
    503: "unavailable", 504: "unavailable" };
  return table[status] || "unknown";
}

function rpcErrorFrom(json, status) {
  if (json && typeof json.code === "string") return new RpcError(json.code, String(json.message || ""));
  return new RpcError(codeFromHttpStatus(status), "HTTP " + status);
}

// The bearer token typed into the header, kept for this tab only (sessionStorage).
const TOKEN_KEY = "agentsessions-token";
function rpcHeaders(contentType) {
  const headers = { "content-type": contentType, "connect-protocol-version": "1" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.authorization = "Bearer " + token;
  return headers;
}

function parseJson(text) {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return undefined;
  }
}

// One unary call; resolves the response message or throws RpcError.
async function unary(method, body) {
  const res = await fetch(RPC_BASE + method, {
    method: "POST",
    headers: rpcHeaders("application/json"),
    body: JSON.stringify(body),
  });
  const json = parseJson(await res.text());
  if (!res.ok || json === undefined) throw rpcErrorFrom(json, res.status);
  return json;
}

function envelope(message) {
  const json = new TextEncoder().encode(JSON.stringify(message));
  const out = new Uint8Array(5 + json.length);
  new DataView(out.buffer).setUint32(1, json.length);
  out.set(json, 5);
  return out;
}

// Splits complete frames off the front of buf; returns them and the unconsumed rest.
function takeFrames(buf) {
  const frames = [];
  let at = 0;
  while (buf.length - at >= 5) {
    const size = new DataView(buf.buffer, buf.byteOffset + at + 1, 4).getUint32(0);
    if (buf.length - at - 5 < size) break;
    frames.push({ flags: buf[at], json: new TextDecoder().decode(buf.subarray(at + 5, at + 5 + size)) });
    at += 5 + size;
  }
  return { frames, rest: buf.subarray(at) };
}

function concatBytes(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

// A server-streaming call: yields each message as it arrives; throws RpcError from the
// end-of-stream frame, and if the stream stops without one (a cut connection).
async function* serverStream(method, body, signal) {
  const res = await fetch(RPC_BASE + method, {
    method: "POST",
    headers: rpcHeaders("application/connect+json"),
    body: envelope(body),
    signal,
  });
  if (!res.ok || !res.body) throw rpcErrorFrom(parseJson(await res.text()), res.status);
  const reader = res.body.getReader();
  let buf = new Uint8Array(0);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const taken = takeFrames(concatBytes(buf, value));
      buf = taken.rest;
      for (const frame of taken.frames) {
        // We never offer compression, so a compressed frame is a protocol error.
        if (frame.flags & COMPRESSED) throw new RpcError("internal", "server sent a compressed frame");
        const json = parseJson(frame.json);
        if (json === undefined) throw new RpcError("internal", "server sent a frame that is not JSON");
        if (frame.flags & END_STREAM) {
          if (json.error) throw rpcErrorFrom(json.error, 200);
          return;
        }
        yield json;
      }
    }
  } finally {
    // Ends the body whether the stream finished, failed or the caller stopped reading.
    reader.cancel().catch(() => {});
  }
  throw new RpcError("unavailable", "the stream ended without an end-of-stream frame");
}
`;
