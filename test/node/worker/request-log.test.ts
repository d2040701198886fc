/**
 * The one-line-per-RPC request log (worker/request-log.ts; checklist §8.17 #155) through connect-es's
 * in-memory router transport: each line carries the request id, tenant, session and outcome;
 * caller-caused outcomes (INVALID_ARGUMENT, a CAS conflict's ABORTED) are INFO, server faults ERROR;
 * and no line carries input or config contents (or a refused Fork's identity, #175), in the Worker
 * or in the session's own log.
 */
import { Code, ConnectError, createClient, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Sessions } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import type { TenantId } from "../../../proto/ids.js";
import { userText } from "../../../proto/messages.js";
import { callerKey, noteSession } from "../../../worker/context.js";
import { requestLog } from "../../../worker/request-log.js";
import { captureConsole, texts } from "../support/console-lines.js";
import { createSession, drain, execReq, setup } from "../support/session-fixture.js";

const INPUT = "input-text-do-not-log";
const CONFIG = "config-bytes-do-not-log";
const PRINCIPAL = "agent://principal-do-not-log";

const asCaller: Interceptor = (next) => (req) => {
  req.contextValues.set(callerKey, { tenant: "acme" as TenantId, requestId: "req-7" });
  return next(req);
};

function client() {
  const transport = createRouterTransport(
    (router) =>
      router.service(Sessions, {
        createSession: async () => {
          throw new ConnectError('unknown harness "nope"', Code.InvalidArgument);
        },
        async *exec(req, ctx) {
          noteSession(ctx, req.session);
          yield { update: { case: "session", value: { lastSeq: 5n } } };
          if (req.expectedLastSeq === 0n) throw new ConnectError("seq conflict: expected head 0, journal head is 5", Code.Aborted);
        },
        fork: async () => {
          throw new ConnectError("ForkRequest.identity is unsupported: per-child principals are not enforced", Code.InvalidArgument);
        },
        resume: async (req, ctx) => {
          noteSession(ctx, req.session);
          throw new ConnectError("internal error", Code.Internal);
        },
      }),
    { router: { interceptors: [asCaller, requestLog] } },
  );
  return createClient(Sessions, transport);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("request log", () => {
  it("request log (checklist §8.17 #155): one line per RPC under the request id; caller errors are INFO, faults ERROR; no input or config", async () => {
    const captured = captureConsole();
    const c = client();
    const config = new TextEncoder().encode(CONFIG);
    for await (const _ of c.exec({ session: "s-1", inputs: [userText(INPUT)], config })) void _;
    await c.createSession({ session: { harness: "nope" } }).catch(() => undefined);
    await (async () => {
      for await (const _ of c.exec({ session: "s-1", inputs: [userText(INPUT)], config, expectedLastSeq: 0n })) void _;
    })().catch(() => undefined);
    await c.resume({ session: "s-1" }).catch(() => undefined);
    await c.fork({ session: "s-1", identity: { principal: PRINCIPAL, subject: PRINCIPAL } }).catch(() => undefined);

    const lines = texts(captured);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.map((l) => [l.operation, l.outcome, l.level, l.session])).toEqual([
      ["Exec", "ok", "info", "s-1"],
      ["CreateSession", "InvalidArgument", "info", ""],
      ["Exec", "Aborted", "info", "s-1"],
      ["Resume", "Internal", "error", "s-1"],
      ["Fork", "InvalidArgument", "info", ""],
    ]);
    for (const l of parsed) expect(l).toMatchObject({ msg: "rpc", request_id: "req-7", tenant: "acme" });
    expect(lines.join("\n")).not.toContain(INPUT);
    expect(lines.join("\n")).not.toContain(CONFIG);
    // checklist §8.17 #175: a refused Fork's identity is not logged either.
    expect(lines.join("\n")).not.toContain(PRINCIPAL);
  });

  it("request log: a stream's line has first_message_ms (no later than its end); a unary call's has none", async () => {
    const captured = captureConsole();
    const c = client();
    for await (const _ of c.exec({ session: "s-1", inputs: [] })) void _;
    await c.resume({ session: "s-1" }).catch(() => undefined);
    const [exec, resume] = texts(captured).map((l) => JSON.parse(l) as Record<string, number | string>);
    expect(typeof exec!.first_message_ms).toBe("number");
    expect(exec!.first_message_ms as number).toBeLessThanOrEqual(exec!.duration_ms as number);
    expect(resume).not.toHaveProperty("first_message_ms");
  });

  it("session log (checklist §8.17 #155): an Exec's own log lines (placement) name the session and never carry its input or config", async () => {
    const fx = setup();
    const uid = await createSession(fx.host);
    const turn = await drain(fx.host.exec(execReq({ inputs: [userText(INPUT)], config: new TextEncoder().encode(CONFIG) })));
    expect(turn.failure).toBeUndefined();
    expect(fx.logs.length).toBeGreaterThan(0);
    for (const l of fx.logs) expect(l).toMatchObject({ session: uid, level: "info" });
    expect(JSON.stringify(fx.logs)).not.toContain(INPUT);
    expect(JSON.stringify(fx.logs)).not.toContain(CONFIG);
  });
});
