/**
 * A real HTTP stand-in for a tool executor webhook (docs/tools.md), for tests.
 *
 * It does what the contract asks of an executor: it deduplicates durably by Idempotency-Key, so
 * the same key runs the effect once however often it is asked, and it counts effects per key. It
 * can fail with a status, or perform the effect and then hold the response (so a test can kill the
 * host between the effect and the receipt).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

export interface ExecutorRequest {
  key: string;
  authorization: string | undefined;
  body: { session: string; execution_id: string; call_id: string; tool: string; args: unknown; idempotency_key: string };
}

export type ExecutorReply =
  | { kind: "ok"; output?: unknown; content?: string }
  | { kind: "tool-error"; error: string }
  | { kind: "fail"; status: number }
  /** Perform the effect, then never answer (the connection is dropped on release). */
  | { kind: "effect-then-hold" };

export interface FakeExecutor {
  url: string;
  requests: ExecutorRequest[];
  /** Effects performed, per Idempotency-Key: never more than 1 for a correct host + executor. */
  effects: Map<string, number>;
  next: (req: ExecutorRequest) => ExecutorReply;
  waitForRequests(n: number): Promise<void>;
  releaseHeld(): void;
  close(): Promise<void>;
}

export async function startFakeExecutor(): Promise<FakeExecutor> {
  const requests: ExecutorRequest[] = [];
  const effects = new Map<string, number>();
  const answers = new Map<string, string>();
  const held: ServerResponse[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const fake: FakeExecutor = {
    url: "",
    requests,
    effects,
    next: () => ({ kind: "ok" }),
    waitForRequests: (n) => new Promise((resolve) => (requests.length >= n ? resolve() : waiters.push({ n, resolve }))),
    releaseHeld: () => {
      for (const r of held.splice(0)) r.destroy();
    },
    close: () =>
      new Promise((resolve) => {
        fake.releaseHeld();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (raw += c));
    req.on("end", () => {
      const key = String(req.headers["idempotency-key"] ?? "");
      const r: ExecutorRequest = { key, authorization: req.headers.authorization, body: JSON.parse(raw || "{}") };
      requests.push(r);
      for (const w of waiters.filter((w) => requests.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      // Durable dedup: a key that already ran answers what it answered, without a second effect.
      const done = answers.get(key);
      if (done !== undefined) {
        res.writeHead(200, { "content-type": "application/json" }).end(done);
        return;
      }
      const reply = fake.next(r);
      if (reply.kind === "fail") {
        res.writeHead(reply.status).end("executor failure");
        return;
      }
      effects.set(key, (effects.get(key) ?? 0) + 1);
      const body =
        reply.kind === "tool-error"
          ? JSON.stringify({ is_error: true, error: reply.error })
          : JSON.stringify({
              output: reply.kind === "ok" ? (reply.output ?? { done: r.body.tool, args: r.body.args }) : { done: r.body.tool },
              content: reply.kind === "ok" ? (reply.content ?? `${r.body.tool} done`) : `${r.body.tool} done`,
            });
      answers.set(key, body);
      if (reply.kind === "effect-then-hold") {
        held.push(res);
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const a = server.address();
  fake.url = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/execute`;
  return fake;
}
