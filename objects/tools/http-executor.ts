/**
 * The tool executor webhook (docs/tools.md): the host POSTs each host-executed call as JSON, with
 * an `Idempotency-Key` header scoped to the session, and records the answer as the receipt.
 *
 * The executor owns the dedup: the same (session, key) must produce the effect once, however many
 * times it is asked (a crash between the effect and the receipt makes the host ask again, once per
 * Resume). The token travels only in the auth header. Tested against a stand-in server in
 * test/node/tools/http-executor.test.ts.
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { PartSchema, ToolResultSchema, type Part, type ToolResult } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ToolExecutionError } from "../controller/errors.js";
import type { ToolExecutor, ToolRequest } from "../controller/tools.js";

export interface HttpExecutorConfig {
  url: string;
  /** Secret; sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Per-call bound in milliseconds (default 30 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** What the executor answers (HTTP 2xx): the receipt's output, model-facing content and error flag. */
interface ExecutorAnswer {
  output?: unknown;
  content?: string | { text?: string }[];
  is_error?: boolean;
  error?: string;
}

export function createHttpExecutor(cfg: HttpExecutorConfig): ToolExecutor {
  const doFetch = cfg.fetch ?? fetch;
  const timeoutMs = cfg.timeoutMs ?? 30_000;
  return {
    async execute(req: ToolRequest, signal: AbortSignal): Promise<ToolResult> {
      const body = {
        session: req.sessionUid,
        execution_id: req.executionId,
        call_id: req.call.id,
        tool: req.call.tool,
        args: req.call.args ?? null,
        idempotency_key: req.call.idempotencyKey,
      };
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "idempotency-key": `${req.sessionUid}/${req.call.idempotencyKey}`,
      };
      if (cfg.token) headers.authorization = `Bearer ${cfg.token}`;
      const timeout = AbortSignal.timeout(timeoutMs);
      let res: Response;
      try {
        res = await doFetch(cfg.url, { method: "POST", headers, body: JSON.stringify(body), signal: anySignal(signal, timeout) });
      } catch (e) {
        if (signal.aborted) throw signal.reason;
        const why = timeout.aborted ? `did not answer within ${timeoutMs} ms` : "is unreachable";
        throw new ToolExecutionError(`tool executor at ${new URL(cfg.url).host} ${why}`, { cause: e });
      }
      let text: string | undefined;
      let readFailure: unknown;
      try {
        text = await res.text();
      } catch (e) {
        readFailure = e;
      }
      if (!res.ok) throw new ToolExecutionError(`tool executor answered HTTP ${res.status} for ${req.call.tool}`);
      // A 2xx whose body was cut off (timeout, dropped connection) is no answer, not an empty receipt.
      if (text === undefined) {
        if (signal.aborted) throw signal.reason;
        const why = timeout.aborted ? `did not finish its answer within ${timeoutMs} ms` : "broke off its answer";
        throw new ToolExecutionError(`tool executor at ${new URL(cfg.url).host} ${why}`, { cause: readFailure });
      }
      let answer: unknown;
      try {
        answer = text === "" ? {} : JSON.parse(text);
      } catch {
        throw new ToolExecutionError(`tool executor answered ${req.call.tool} with a body that is not JSON`);
      }
      if (!isAnswer(answer))
        throw new ToolExecutionError(`tool executor answered ${req.call.tool} with JSON that is not a {output, content, is_error, error} object`);
      return receiptOf(req, answer);
    },
  };
}

function isAnswer(v: unknown): v is ExecutorAnswer {
  if (!v || typeof v !== "object" || Array.isArray(v)) return false;
  const c = (v as ExecutorAnswer).content;
  return c === undefined || c === null || typeof c === "string" || (Array.isArray(c) && c.every((p) => !!p && typeof p === "object"));
}

function receiptOf(req: ToolRequest, a: ExecutorAnswer): ToolResult {
  const output =
    a.output !== undefined && a.output !== null && typeof a.output === "object" && !Array.isArray(a.output)
      ? (a.output as JsonObject)
      : a.output === undefined
        ? undefined
        : { value: a.output as never };
  const content: Part[] = (typeof a.content === "string" ? [{ text: a.content }] : (a.content ?? [])).map((c) =>
    create(PartSchema, { part: { case: "text", value: { text: String(c.text ?? "") } } }),
  );
  return create(ToolResultSchema, { id: req.call.id, output, content, isError: a.is_error === true, error: typeof a.error === "string" ? a.error : "" });
}

function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  const c = new AbortController();
  const abort = (s: AbortSignal) => () => c.abort(s.reason);
  if (a.aborted) c.abort(a.reason);
  else if (b.aborted) c.abort(b.reason);
  a.addEventListener("abort", abort(a), { once: true });
  b.addEventListener("abort", abort(b), { once: true });
  return c.signal;
}
