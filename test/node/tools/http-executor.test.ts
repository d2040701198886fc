/**
 * The tool executor webhook client (objects/tools/http-executor.ts; docs/behaviour.md §1.5 `ToolCall`,
 * §2.1 I3) over real HTTP with the global fetch: against the stand-in executor
 * (test/node/support/fake-executor.ts), and against a bare recording server for the wire details
 * and answer shapes the stand-in cannot produce (header set, list content, broken bodies).
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import { inspect } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Mediation, ToolCallSchema, type ToolCall } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ToolExecutionError } from "../../../objects/controller/errors.js";
import { createHttpExecutor } from "../../../objects/tools/http-executor.js";
import { freePort } from "../../../scripts/dev-server.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";

const TOKEN = "exec-tok-SECRET-7731";
const SESSION = "sess-0000000000000000000000aa";
const EXECUTION = "exec-1";

function call(o: { id?: string; tool?: string; args?: JsonObject; key?: string } = {}): ToolCall {
  const id = o.id ?? "call-1";
  return create(ToolCallSchema, {
    id,
    tool: o.tool ?? "lookup",
    args: o.args,
    mediation: Mediation.CONTROLLER_MEDIATED,
    idempotencyKey: o.key ?? `${EXECUTION}/${id}`,
  });
}

const live = () => new AbortController().signal;

/** A bare server that records each request verbatim and answers as the test says. */
async function startRecorder(answer: (res: ServerResponse) => void) {
  const seen: { method: string; path: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body });
      answer(res);
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const a = server.address();
  return {
    url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/hook`,
    seen,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/** Runs one call against a recorder answering `answer`, and returns the settled outcome. */
async function againstRecorder(answer: (res: ServerResponse) => void, timeoutMs?: number) {
  const rec = await startRecorder(answer);
  try {
    const ex = createHttpExecutor({ url: rec.url, token: TOKEN, timeoutMs });
    return await ex.execute({ sessionUid: SESSION, executionId: EXECUTION, call: call() }, live()).then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined, error }),
    );
  } finally {
    await rec.close();
  }
}

/** A failure must be a ToolExecutionError whose message (and whole inspected chain) never holds the token. */
function expectToolError(error: unknown, message: RegExp): void {
  expect(error).toBeInstanceOf(ToolExecutionError);
  expect((error as Error).message).toMatch(message);
  expect(inspect(error, { depth: 10 })).not.toContain(TOKEN);
}

let fake: FakeExecutor;
beforeEach(async () => {
  fake = await startFakeExecutor();
});
afterEach(async () => {
  await fake.close();
});

describe("request", () => {
  it("execute: POSTs the documented JSON body with the session-scoped Idempotency-Key and the bearer token", async () => {
    const rec = await startRecorder((res) => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
    try {
      const ex = createHttpExecutor({ url: rec.url, token: TOKEN });
      await ex.execute({ sessionUid: SESSION, executionId: EXECUTION, call: call({ id: "c7", args: { city: "Paris", n: 2, nested: { ok: true } } }) }, live());
      expect(rec.seen).toHaveLength(1);
      const r = rec.seen[0]!;
      expect(r.method).toBe("POST");
      expect(r.path).toBe("/hook");
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["idempotency-key"]).toBe(`${SESSION}/${EXECUTION}/c7`);
      expect(r.headers.authorization).toBe(`Bearer ${TOKEN}`);
      expect(JSON.parse(r.body)).toEqual({
        session: SESSION,
        execution_id: EXECUTION,
        call_id: "c7",
        tool: "lookup",
        args: { city: "Paris", n: 2, nested: { ok: true } },
        idempotency_key: `${EXECUTION}/c7`,
      });
    } finally {
      await rec.close();
    }
  });

  it("execute: a call without args sends args null, and no Authorization header without a token", async () => {
    const ex = createHttpExecutor({ url: fake.url });
    await ex.execute({ sessionUid: SESSION, executionId: EXECUTION, call: call({ id: "bare" }) }, live());
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.body).toEqual({
      session: SESSION,
      execution_id: EXECUTION,
      call_id: "bare",
      tool: "lookup",
      args: null,
      idempotency_key: `${EXECUTION}/bare`,
    });
    expect(fake.requests[0]!.authorization).toBeUndefined();
  });
});

describe("answer mapping", () => {
  it("execute: output and string content become the receipt, with the call's id and no error", async () => {
    fake.next = () => ({ kind: "ok", output: { population: 2_100_000 }, content: "Paris: 2.1M" });
    const ex = createHttpExecutor({ url: fake.url, token: TOKEN });
    const r = await ex.execute({ sessionUid: SESSION, executionId: EXECUTION, call: call({ id: "c1", args: { city: "Paris" } }) }, live());
    expect(r.id).toBe("c1");
    expect(r.output).toEqual({ population: 2_100_000 });
    expect(r.content.map((p) => (p.part.case === "text" ? p.part.value.text : p.part.case))).toEqual(["Paris: 2.1M"]);
    expect(r.isError).toBe(false);
    expect(r.error).toBe("");
  });

  it("execute: a non-object output is kept under output.value", async () => {
    for (const output of [42, "text", [1, 2]]) {
      const f = await startFakeExecutor();
      try {
        f.next = () => ({ kind: "ok", output });
        const r = await createHttpExecutor({ url: f.url }).execute({ sessionUid: SESSION, executionId: EXECUTION, call: call() }, live());
        expect(r.output).toEqual({ value: output });
      } finally {
        await f.close();
      }
    }
  });

  it("execute: is_error and error map to the receipt's error fields", async () => {
    fake.next = () => ({ kind: "tool-error", error: "no such city" });
    const r = await createHttpExecutor({ url: fake.url }).execute({ sessionUid: SESSION, executionId: EXECUTION, call: call({ id: "c2" }) }, live());
    expect(r).toMatchObject({ id: "c2", isError: true, error: "no such city", content: [] });
    expect(r.output).toBeUndefined();
  });

  it("execute: list content becomes one text part per item, and an id in the answer is ignored for the call's", async () => {
    const answer = { id: "executor-chosen", output: { ok: true }, content: [{ text: "first" }, { text: "second" }, {}], is_error: false };
    const { result, error } = await againstRecorder((res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer)));
    expect(error).toBeUndefined();
    expect(result!.id).toBe("call-1");
    expect(result!.content.map((p) => (p.part.case === "text" ? p.part.value.text : p.part.case))).toEqual(["first", "second", ""]);
    expect(result!.output).toEqual({ ok: true });
  });

  it("execute: an empty 2xx body is a receipt with only the call's id", async () => {
    const { result, error } = await againstRecorder((res) => res.writeHead(204).end());
    expect(error).toBeUndefined();
    expect(result).toMatchObject({ id: "call-1", isError: false, error: "", content: [] });
    expect(result!.output).toBeUndefined();
  });
});

describe("idempotency", () => {
  it("execute: the same key asked twice sends the same Idempotency-Key and the executor performs one effect", async () => {
    fake.next = () => ({ kind: "ok", output: { charged: 10 } });
    const ex = createHttpExecutor({ url: fake.url, token: TOKEN });
    const req = { sessionUid: SESSION, executionId: EXECUTION, call: call({ id: "pay-1", tool: "pay", args: { amount: 10 } }) };
    const first = await ex.execute(req, live());
    const second = await ex.execute(req, live());
    expect(fake.requests.map((r) => r.key)).toEqual([`${SESSION}/${EXECUTION}/pay-1`, `${SESSION}/${EXECUTION}/pay-1`]);
    expect([...fake.effects]).toEqual([[`${SESSION}/${EXECUTION}/pay-1`, 1]]);
    expect(second).toEqual(first);
  });

  it("execute: the key is scoped by session: the same call key in another session is another effect", async () => {
    const ex = createHttpExecutor({ url: fake.url });
    const c = call({ id: "pay-1", key: "shared-key" });
    await ex.execute({ sessionUid: SESSION, executionId: EXECUTION, call: c }, live());
    await ex.execute({ sessionUid: "sess-0000000000000000000000bb", executionId: EXECUTION, call: c }, live());
    expect(fake.requests.map((r) => r.key)).toEqual([`${SESSION}/shared-key`, "sess-0000000000000000000000bb/shared-key"]);
    expect(fake.effects.size).toBe(2);
  });
});

describe("failures", () => {
  it("execute: HTTP 500 throws ToolExecutionError naming the status and the tool, without the token", async () => {
    fake.next = () => ({ kind: "fail", status: 500 });
    const err = await createHttpExecutor({ url: fake.url, token: TOKEN })
      .execute({ sessionUid: SESSION, executionId: EXECUTION, call: call() }, live())
      .catch((e: unknown) => e);
    expectToolError(err, /^tool executor answered HTTP 500 for lookup$/);
    expect(fake.effects.size).toBe(0);
  });

  it("execute: a 2xx body that is not JSON throws ToolExecutionError", async () => {
    const { error } = await againstRecorder((res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>oops</html>"));
    expectToolError(error, /^tool executor answered lookup with a body that is not JSON$/);
  });

  it("execute: 2xx JSON that is not an answer object throws ToolExecutionError, not a TypeError", async () => {
    for (const body of ["null", "[1,2]", '"done"', '{"content":5}', '{"content":[null]}']) {
      const { error } = await againstRecorder((res) => res.writeHead(200, { "content-type": "application/json" }).end(body));
      expectToolError(error, /^tool executor answered lookup with JSON that is not a/);
    }
  });

  it("execute: an unreachable host throws ToolExecutionError naming the host, without the token", async () => {
    const port = await freePort();
    const err = await createHttpExecutor({ url: `http://127.0.0.1:${port}/hook`, token: TOKEN })
      .execute({ sessionUid: SESSION, executionId: EXECUTION, call: call() }, live())
      .catch((e: unknown) => e);
    expectToolError(err, new RegExp(`^tool executor at 127\\.0\\.0\\.1:${port} is unreachable$`));
  });

  it("execute: an executor that does not answer within timeoutMs throws ToolExecutionError; asking again returns its answer with no second effect", async () => {
    fake.next = () => ({ kind: "effect-then-hold" });
    const ex = createHttpExecutor({ url: fake.url, token: TOKEN, timeoutMs: 50 });
    const req = { sessionUid: SESSION, executionId: EXECUTION, call: call({ id: "slow" }) };
    const err = await ex.execute(req, live()).catch((e: unknown) => e);
    fake.releaseHeld();
    expectToolError(err, /^tool executor at 127\.0\.0\.1:\d+ did not answer within 50 ms$/);
    // The effect happened before the timeout: the retry with the same key must not repeat it.
    fake.next = () => ({ kind: "ok" });
    const r = await createHttpExecutor({ url: fake.url }).execute(req, live());
    expect(r.id).toBe("slow");
    expect(fake.requests).toHaveLength(2);
    expect([...fake.effects.values()]).toEqual([1]);
  });

  it("execute: a 2xx answer whose body never completes throws ToolExecutionError, not an empty receipt", async () => {
    // Headers and half a body, then nothing: the timeout fires while the body is being read.
    const { result, error } = await againstRecorder((res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"output":');
    }, 100);
    expect(result).toBeUndefined();
    expectToolError(error, /within 100 ms$/);
  });

  it("execute: a 2xx answer cut off mid-body throws ToolExecutionError, not an empty receipt", async () => {
    const { result, error } = await againstRecorder((res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"output":', () => res.destroy());
    });
    expect(result).toBeUndefined();
    expectToolError(error, /^tool executor at 127\.0\.0\.1:\d+ (broke off its answer|is unreachable)$/);
  });
});

describe("cancellation", () => {
  it("execute: an already-aborted signal rejects with its reason and sends nothing", async () => {
    const ac = new AbortController();
    const reason = new Error("turn canceled");
    ac.abort(reason);
    const err = await createHttpExecutor({ url: fake.url })
      .execute({ sessionUid: SESSION, executionId: EXECUTION, call: call() }, ac.signal)
      .catch((e: unknown) => e);
    expect(err).toBe(reason);
    expect(fake.requests).toHaveLength(0);
  });

  it("execute: aborting while the executor holds the reply rejects with the abort reason, not a ToolExecutionError", async () => {
    fake.next = () => ({ kind: "effect-then-hold" });
    const ac = new AbortController();
    const reason = new Error("deadline passed");
    const pending = createHttpExecutor({ url: fake.url })
      .execute({ sessionUid: SESSION, executionId: EXECUTION, call: call() }, ac.signal)
      .catch((e: unknown) => e);
    await fake.waitForRequests(1);
    ac.abort(reason);
    expect(await pending).toBe(reason);
    fake.releaseHeld();
  });
});
