/**
 * The fuzz suite's HTTP side: `send` (the one place a request is built, so credentials can be added
 * later) and `judge`, the oracle every answer must pass:
 *  - an answer arrives (no reset, no hang past the bound; a request whose pooled connection the
 *    server had just closed is sent again, at most twice, and counted);
 *  - a 5xx carries a Connect error JSON body with a valid code; nothing is a workerd/wrangler
 *    exception page;
 *  - no Connect error is `internal` or `unknown` (an unclassified failure), unless it is listed in
 *    KNOWN_FINDINGS with the reason it is not fixed yet (none is);
 *  - a unary 200 decodes as the method's output; a stream is well-formed envelopes whose messages
 *    decode, ending in exactly one end-stream frame that carries no error or a valid Connect error.
 */
import { fromBinary, fromJsonString, type DescMethod } from "@bufbuild/protobuf";
import type { Session } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { isProxyRestart } from "../support/proxy-resend.js";

export interface Answer {
  status: number;
  contentType: string;
  headers: Headers;
  body: Uint8Array;
  /** Set when no HTTP answer came back (reset, refused, timed out). */
  failure?: string;
}

const ANSWER_BOUND_MS = 45_000;

/**
 * How many requests were sent again after their pooled connection was found closed (see `send`):
 * the storm prints it, and fails when it is more than a rare race would explain.
 */
export const resent = { count: 0 };

/** Sends after a closed pooled connection at most this many times before it is a finding. */
const RESENDS = 2;

export async function send(
  base: string,
  path: string,
  body: Uint8Array,
  contentType: string,
  headers: Record<string, string> = {},
  method = "POST",
): Promise<Answer> {
  const h = new Headers(headers);
  if (contentType) h.set("content-type", contentType);
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(base + path, {
        method,
        headers: h,
        body: method === "GET" ? undefined : (body as unknown as BodyInit),
        signal: AbortSignal.timeout(ANSWER_BOUND_MS),
      });
      const answer = {
        status: res.status,
        contentType: res.headers.get("content-type") ?? "",
        headers: res.headers,
        body: new Uint8Array(await res.arrayBuffer()),
      };
      // The same race seen from `wrangler dev`'s proxy: its pooled connection to workerd was
      // closed, its own fetch failed, and it answered 503 "Your worker restarted mid-request"
      // for a request the Worker never saw (bench/lib.ts retryProxy503). A deployed Worker has no
      // such proxy in front of it; sent again like the case below, and counted with it.
      if (attempt < RESENDS && isProxyRestart(answer.status, new TextDecoder().decode(answer.body))) {
        resent.count++;
        continue;
      }
      return answer;
    } catch (e) {
      const err = e as Error & { cause?: Error & { code?: string } };
      // A kept-alive connection the server closed as the request went out on it: the client's
      // pool raced the server's idle close, and no answer was refused. The same race while a large
      // body is still being written shows as EPIPE (one CI run, a huge-string DeleteSession). Sent
      // again (on another connection); a request that itself makes the host drop connections
      // fails every time.
      const closedUnder = (err.cause?.code === "UND_ERR_SOCKET" && err.cause.message === "other side closed") || err.cause?.code === "EPIPE";
      if (closedUnder && attempt < RESENDS) {
        resent.count++;
        continue;
      }
      return {
        status: 0,
        contentType: "",
        headers: new Headers(),
        body: new Uint8Array(),
        failure: `${err.name}: ${err.message}${err.cause ? ` (${err.cause.message})` : ""}`,
      };
    }
  }
}

const CODES = new Set([
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
]);

/**
 * Unclassified failures that are understood but not fixed yet, each naming its fix: an entry turns
 * a finding into an outcome so the storm can still guard everything else. Empty: the two entries
 * it held (a binary body that does not decode, an envelope flagged compressed with no encoding,
 * both INTERNAL from connect-es) are refused as INVALID_ARGUMENT by worker/request-check.ts.
 */
export const KNOWN_FINDINGS: { id: string; fix: string; matches: (code: string, message: string) => boolean }[] = [];

export interface Verdict {
  findings: string[];
  /** The Connect code of an error answer, "ok" for a success. */
  outcome: string;
  /** The error message, for FUZZ_VERBOSE histograms. */
  detail?: string;
  /** The session a successful write named (unary Session answers, Exec streams that committed records). */
  wrote?: string;
  /** Decoded messages of a successful answer. */
  messages: unknown[];
}

export function judge(method: DescMethod | undefined, a: Answer): Verdict {
  const v: Verdict = { findings: [], outcome: "?", messages: [] };
  if (a.failure) {
    v.findings.push(`no answer: ${a.failure}`);
    return v;
  }
  const text = new TextDecoder().decode(a.body.subarray(0, 2000));
  if (/Worker threw exception|<!DOCTYPE|<html/i.test(text)) v.findings.push(`an exception page, not a Connect error`);
  const ct = a.contentType.split(";")[0]!.trim().toLowerCase();
  if (a.status !== 200) {
    const err = parseError(text, ct);
    if (err) errorFindings(v, err.code, err.message);
    else if (a.status >= 500) v.findings.push(`HTTP ${a.status} without a Connect error body`);
    else v.outcome = `http-${a.status}`;
    return v;
  }
  if (!method) {
    v.outcome = "ok";
    return v;
  }
  if (ct.startsWith("application/connect+")) streamFindings(v, method, a.body, ct.endsWith("json"));
  else if (ct === "application/proto" || ct === "application/json") {
    try {
      v.messages.push(ct === "application/json" ? fromJsonString(method.output, new TextDecoder().decode(a.body)) : fromBinary(method.output, a.body));
      v.outcome = "ok";
    } catch (e) {
      v.findings.push(`a 200 whose body does not decode as ${method.output.typeName}: ${(e as Error).message}`);
    }
  } else if (ct.startsWith("application/grpc")) {
    grpcFindings(v, a);
  } else v.findings.push(`a 200 with content-type ${JSON.stringify(a.contentType)}`);
  if (v.outcome === "ok") v.wrote = wroteTo(method, v.messages);
  return v;
}

function parseError(text: string, ct: string): { code: string; message: string } | undefined {
  if (ct !== "application/json") return undefined;
  try {
    const j = JSON.parse(text) as { code?: unknown; message?: unknown };
    if (typeof j.code !== "string") return undefined;
    return { code: j.code, message: typeof j.message === "string" ? j.message : "" };
  } catch {
    return undefined;
  }
}

function errorFindings(v: Verdict, code: string, message: string): void {
  v.outcome = code;
  v.detail = message;
  if (!CODES.has(code)) v.findings.push(`not a Connect code: ${JSON.stringify(code)}`);
  if (code === "internal" || code === "unknown") {
    const known = KNOWN_FINDINGS.find((k) => k.matches(code, message));
    if (known) v.outcome = `known:${known.id}`;
    else v.findings.push(`unclassified failure: ${code} ${JSON.stringify(message.slice(0, 300))}`);
  }
}

function streamFindings(v: Verdict, method: DescMethod, body: Uint8Array, json: boolean): void {
  let at = 0;
  let ended = false;
  while (at < body.length) {
    if (ended) return void v.findings.push("bytes after the end-stream frame");
    if (body.length - at < 5) return void v.findings.push("a stream cut inside an envelope header");
    const flags = body[at]!;
    const len = new DataView(body.buffer, body.byteOffset + at + 1, 4).getUint32(0);
    if (body.length - at - 5 < len) return void v.findings.push("a stream cut inside an envelope");
    const payload = body.subarray(at + 5, at + 5 + len);
    at += 5 + len;
    if (flags === 0x02) {
      ended = true;
      let end: { error?: { code?: unknown; message?: unknown } };
      try {
        end = JSON.parse(new TextDecoder().decode(payload)) as typeof end;
      } catch {
        return void v.findings.push("an end-stream frame that is not JSON");
      }
      if (end.error) errorFindings(v, String(end.error.code), String(end.error.message ?? ""));
      else v.outcome = "ok";
    } else if (flags === 0) {
      try {
        v.messages.push(json ? fromJsonString(method.output, new TextDecoder().decode(payload)) : fromBinary(method.output, payload));
      } catch (e) {
        v.findings.push(`a stream message that does not decode as ${method.output.typeName}: ${(e as Error).message}`);
      }
    } else return void v.findings.push(`an envelope with flags ${flags}`);
  }
  if (!ended) v.findings.push("a stream without an end-stream frame");
  // An Exec that committed records wrote to the session of its first frame, error or not.
  if (method.name === "Exec") {
    const updates = v.messages as { update: { case?: string; value?: unknown } }[];
    const first = updates.find((u) => u.update.case === "session")?.update.value as Session | undefined;
    if (first && updates.some((u) => u.update.case === "record")) v.wrote = first.metadata?.uid;
  }
}

/** gRPC and gRPC-Web: the status is a header (trailers-only) or a trailer frame (flag 0x80). */
function grpcFindings(v: Verdict, a: Answer): void {
  let status = a.headers.get("grpc-status");
  let message = a.headers.get("grpc-message") ?? "";
  if (status === null) {
    for (let at = 0; at + 5 <= a.body.length; ) {
      const len = new DataView(a.body.buffer, a.body.byteOffset + at + 1, 4).getUint32(0);
      if (a.body[at]! & 0x80) {
        const trailer = new TextDecoder().decode(a.body.subarray(at + 5, at + 5 + len));
        status = /grpc-status:\s*(\d+)/i.exec(trailer)?.[1] ?? null;
        message = /grpc-message:\s*([^\r\n]*)/i.exec(trailer)?.[1] ?? "";
      }
      at += 5 + len;
    }
  }
  if (status === null) return void v.findings.push("a gRPC answer with no grpc-status, in its headers or its trailers");
  const code = [
    "ok",
    "canceled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
  ][Number(status)];
  if (code === undefined) return void v.findings.push(`grpc-status ${status} is not a gRPC code`);
  if (code === "ok") return void (v.outcome = "grpc:ok");
  let text = message;
  try {
    text = decodeURIComponent(message);
  } catch {
    // not percent-encoded
  }
  errorFindings(v, code, text);
  v.outcome = `grpc:${v.outcome}`;
}

function wroteTo(method: DescMethod, messages: unknown[]): string | undefined {
  if (!["Suspend", "Resume", "Cancel", "DeleteSession"].includes(method.name)) return undefined;
  return (messages[0] as Session | undefined)?.metadata?.uid;
}
