/**
 * The four systems of `npm run bench:peers`, behind one shape: open a session, run a chat turn
 * (the user's message in, the stub model's answer out, both durable when the turn returns), build
 * a long history in bulk, and name the processes and SQLite files that hold its storage.
 *
 * - ours: this repo's host under `wrangler dev`, the `chat` harness with the built-in `echo` model,
 *   over HTTP with the TypeScript client (sdk/client.ts) on the SDK's node:http fetch.
 * - langgraph: LangGraph JS in process with the SQLite checkpointer (bench/peers/langgraph-runner.mjs).
 * - aichat: the Agents SDK's AIChatAgent over its WebSocket protocol (bench/peers/worker).
 * - bare_do: a bare Agents-SDK Durable Object that stores rows with SQL, over HTTP the way ours'
 *   client goes (node:http and a chunk queue: bench/lib.ts postBytes; Node's own fetch would cost
 *   it about 1 ms more CPU a turn).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import WebSocket from "ws";
import { ROOT, startDevServer } from "../../scripts/dev-server.js";
import { postBytes, retryProxy503 } from "../lib.js";
import { SessionsClient } from "../../sdk/client.js";
import { nodeFetch } from "../../sdk/node/index.js";
import { type Cleanup, groupPids, type PeersWorker, stopGroup, wranglerGroupOf } from "./processes.js";
import type { SystemName } from "./stats.js";

export interface PeerSession {
  /** One chat turn; resolves with its time in ms once the answer is back (and durable). */
  turn(text: string): Promise<number>;
  /** Appends `turns` user/answer pairs the cheapest way the system offers (see each system). */
  seed(turns: number): Promise<void>;
  close(): Promise<void>;
}

export interface System {
  name: SystemName;
  open(name: string, role: "fresh" | "long"): Promise<PeerSession>;
  /** The SQLite files that hold the system's storage (summed for bytes per turn). */
  storageFiles(): string[];
  /** The processes whose fsyncs count for the system. */
  fsyncPids(): number[];
  /** Every process that serves the system (its CPU per turn is the serving side's). */
  servingPids(): number[];
}

function expectAnswer(system: string, text: string, answer: string | undefined): void {
  if (answer !== `echo:${text}`) throw new Error(`${system}: a turn answered ${JSON.stringify(answer)}, not the stub model's echo of ${JSON.stringify(text)}`);
}

/** The DO SQLite files under a `wrangler dev --persist-to` directory (metadata files excluded). */
function doFiles(persistDir: string, classDir?: (name: string) => boolean): string[] {
  const root = join(persistDir, "v3", "do");
  if (!existsSync(root)) return [];
  const out: string[] = [];
  for (const d of readdirSync(root)) {
    if (classDir && !classDir(d)) continue;
    for (const f of readdirSync(join(root, d))) if (/^[0-9a-f]{64}\.sqlite$/.test(f)) out.push(join(root, d, f));
  }
  return out;
}

export interface Ours extends System {
  logFile: string;
  /** Requests the model stand-in received (the echo model runs in the host: expected 0). */
  stubCalls(): number;
}

/**
 * Ours. The chat harness is served only when a model provider is configured (MODEL_BASE_URL), so
 * MODEL_BASE_URL points at a local stand-in; sessions use the host's built-in `echo` model, which
 * answers in the host without calling it. Long histories are built with turns of the built-in
 * `echo` harness (a per-turn override between built-ins): they write the same records as a chat
 * turn with the echo model, and cost what a fresh turn costs, since echo never reads its history.
 */
export async function startOurs(persistDir: string, cleanup: Cleanup, logLevel: string): Promise<Ours> {
  let stubCalls = 0;
  const stub = createServer((req, res) => {
    stubCalls++;
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "stub",
          object: "chat.completion",
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "stub" } }],
        }),
      );
    });
  });
  await new Promise<void>((ok) => stub.listen(0, "127.0.0.1", () => ok()));
  cleanup.add(() => new Promise<void>((ok) => stub.close(() => ok())));
  const port = (stub.address() as { port: number }).port;
  const server = await startDevServer({ persistDir, vars: { MODEL_BASE_URL: `http://127.0.0.1:${port}/v1`, LOG_LEVEL: logLevel } });
  cleanup.add(() => server.dispose());
  const client = new SessionsClient({ server: server.url, fetch: nodeFetch });
  const group = wranglerGroupOf(persistDir);
  return {
    name: "ours",
    logFile: server.logFile,
    stubCalls: () => stubCalls,
    storageFiles: () => doFiles(persistDir),
    fsyncPids: () => groupPids(group, "workerd"),
    servingPids: () => groupPids(group),
    async open(name) {
      // After a pause (the other systems' rounds) the proxy may refuse it as it may refuse a turn.
      const s = await retryProxy503(() => client.create({ name, harness: "chat", model: "echo" }));
      const uid = s.metadata!.uid;
      let seeded = 0;
      return {
        async turn(text) {
          let t = 0;
          // wrangler dev's proxy can refuse a request on a connection workerd closed while idle
          // (bench/lib.ts retryProxy503); only the attempt that reached the host is timed.
          const r = await retryProxy503(() => {
            t = performance.now();
            return client.exec({ session: uid, inputs: [text] });
          });
          const ms = performance.now() - t;
          expectAnswer("ours", text, r.outputs[0]);
          return ms;
        },
        async seed(turns) {
          for (let i = 0; i < turns; i++) {
            const text = `seed ${seeded++}`;
            const r = await waitOutRateLimit(() => retryProxy503(() => client.exec({ session: uid, inputs: [text], harness: "echo" })));
            expectAnswer("ours", text, r.outputs[0]);
          }
        },
        close: async () => {},
      };
    },
  };
}

/**
 * Seeding runs echo turns back to back, untimed, and on a fast machine they pass the tenant's
 * default request rate (RATE_LIMIT_PER_SECOND, 200). The host refuses such a request before it
 * writes anything and says when to retry; the bench waits and retries, so the measured turns run
 * on the host's default limits.
 */
async function waitOutRateLimit<T>(f: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await f();
    } catch (e) {
      if (!(e instanceof ConnectError) || e.code !== Code.ResourceExhausted || attempt >= 20) throw e;
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }
}

/** The LangGraph runner's client (Node IPC); the runner also sizes SQLite files for the others. */
export interface LangGraph extends System {
  sizes(files: string[]): Promise<number[]>;
}

export async function startLangGraph(dir: string, cleanup: Cleanup): Promise<LangGraph> {
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, "bench/peers/langgraph-runner.mjs"), dir], {
    cwd: join(ROOT, "bench/peers"),
    detached: true,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  cleanup.add(() => stopGroup(child));
  let next = 0;
  const waiting = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>();
  await new Promise<void>((ok, fail) => {
    child.once("exit", (code) => fail(new Error(`the LangGraph runner exited with ${code}`)));
    child.on("message", (m: { ready?: boolean; id?: number; ok?: boolean; result?: unknown; error?: string }) => {
      if (m.ready) return ok();
      const w = waiting.get(m.id!);
      waiting.delete(m.id!);
      if (m.ok) w?.ok(m.result);
      else w?.fail(new Error(`langgraph: ${m.error}`));
    });
  });
  const call = <T>(op: string, args: Record<string, unknown>): Promise<T> =>
    new Promise<T>((ok, fail) => {
      const id = ++next;
      waiting.set(id, { ok: ok as (v: unknown) => void, fail });
      child.send({ id, op, ...args });
    });
  return {
    name: "langgraph",
    sizes: (files) => call<number[]>("sizes", { files }),
    storageFiles: () =>
      readdirSync(dir)
        .filter((f) => f.endsWith(".sqlite"))
        .map((f) => join(dir, f)),
    fsyncPids: () => [child.pid!],
    servingPids: () => [child.pid!],
    async open(name, role) {
      // One database for the fresh and parallel sessions, as an application would have; each long
      // session gets its own, so its storage can be read on its own.
      const store = role === "long" ? `long-${name}` : "main";
      let seeded = 0;
      return {
        turn: (text) => call<number>("turn", { store, thread: name, text }),
        async seed(turns) {
          await call("seed", { store, thread: name, turns, from: seeded });
          seeded += turns;
        },
        close: async () => {},
      };
    },
  };
}

interface UiMessage {
  id: string;
  role: "user" | "assistant";
  parts: Record<string, unknown>[];
}

/** The assistant message as the AI SDK's client assembles it from the stream (and as the agent stores it). */
function assistantMessage(id: string, text: string): UiMessage {
  return { id, role: "assistant", parts: [{ type: "step-start" }, { type: "text", text, state: "done" }] };
}

/**
 * AIChatAgent, driven as `useAgentChat` drives it: each request carries the whole conversation,
 * and the answer streams back as `cf_agent_use_chat_response` frames until one says `done`. A long
 * history is built by sending it in one request (the agent stores the messages it has not seen),
 * which is also a turn.
 */
/** How long one peer turn may take before the run fails (turns take milliseconds). */
const PEER_TURN_TIMEOUT_MS = 60_000;

export function aiChat(worker: PeersWorker): System {
  const wsBase = worker.url.replace(/^http/, "ws");
  const group = worker.child.pid!;
  return {
    name: "aichat",
    storageFiles: () => doFiles(worker.persistDir, (d) => d.endsWith("-ChatAgent")),
    fsyncPids: () => groupPids(group, "workerd"),
    servingPids: () => groupPids(group),
    async open(name) {
      const ws = new WebSocket(`${wsBase}/agents/chat-agent/${encodeURIComponent(name)}`);
      await new Promise<void>((ok, fail) => {
        ws.once("open", () => ok());
        ws.once("error", fail);
      });
      const pending = new Map<string, { messageId: string; text: string; ok: () => void; fail: (e: Error) => void }>();
      ws.on("message", (data) => {
        const m = JSON.parse(String(data)) as { type?: string; id?: string; body?: string; done?: boolean; error?: boolean };
        if (m.type !== "cf_agent_use_chat_response" || !m.id) return;
        const p = pending.get(m.id);
        if (!p) return;
        if (m.error) {
          pending.delete(m.id);
          return p.fail(new Error(`aichat: the turn failed: ${m.body}`));
        }
        if (m.body) {
          const chunk = JSON.parse(m.body) as { type: string; messageId?: string; delta?: string };
          if (chunk.type === "start" && chunk.messageId) p.messageId = chunk.messageId;
          if (chunk.type === "text-delta") p.text += chunk.delta ?? "";
        }
        if (m.done) {
          pending.delete(m.id);
          p.ok();
        }
      });
      ws.on("close", () => {
        for (const p of pending.values()) p.fail(new Error("aichat: the WebSocket closed during a turn"));
        pending.clear();
      });
      let messages: UiMessage[] = [];
      let n = 0;
      const request = async (text: string, history: UiMessage[]): Promise<number> => {
        const id = `r${++n}`;
        const user: UiMessage = { id: `u${n}-${history.length}`, role: "user", parts: [{ type: "text", text }] };
        const sent = [...history, user];
        const body = JSON.stringify({ messages: sent, trigger: "submit-message" });
        const turn = { messageId: "", text: "", ok: () => {}, fail: (_e: Error) => {} };
        const t = performance.now();
        await new Promise<void>((ok, fail) => {
          // A stalled agent must fail the run, not hang it (one run waited forever on 8 of its turns).
          const stalled = setTimeout(() => {
            pending.delete(id);
            fail(new Error(`aichat: no done frame within ${PEER_TURN_TIMEOUT_MS / 1000} s for request ${id}: the agent stalled; run the bench again`));
          }, PEER_TURN_TIMEOUT_MS);
          const settle = (f: () => void) => () => {
            clearTimeout(stalled);
            f();
          };
          Object.assign(turn, { ok: settle(ok), fail: (e: Error) => settle(() => fail(e))() });
          pending.set(id, turn);
          ws.send(JSON.stringify({ type: "cf_agent_use_chat_request", id, init: { method: "POST", body } }));
        });
        const ms = performance.now() - t;
        const done = turn;
        expectAnswer("aichat", text, done.text);
        messages = [...sent, assistantMessage(done.messageId, done.text)];
        return ms;
      };
      return {
        turn: (text) => request(text, messages),
        async seed(turns) {
          const history = [...messages];
          for (let i = 0; i < turns; i++) {
            history.push({ id: `s${history.length}`, role: "user", parts: [{ type: "text", text: `seed ${i}` }] });
            history.push(assistantMessage(`sa${history.length}`, `echo:seed ${i}`));
          }
          // The last seeded pair's place is taken by this turn, so the history grows by `turns`.
          history.splice(-2, 2);
          await request("seed turn", history);
        },
        close: async () => {
          ws.close();
        },
      };
    },
  };
}

const UTF8 = new TextEncoder();

/** The bare Agents-SDK Durable Object: POST the text, get the answer; `?seed=N` appends N turns. */
export function bareDo(worker: PeersWorker): System {
  const group = worker.child.pid!;
  return {
    name: "bare_do",
    storageFiles: () => doFiles(worker.persistDir, (d) => d.endsWith("-BareAgent")),
    fsyncPids: () => groupPids(group, "workerd"),
    servingPids: () => groupPids(group),
    async open(name) {
      const url = `${worker.url}/agents/bare-agent/${encodeURIComponent(name)}`;
      const post = async (u: string, body: string): Promise<string> => {
        const r = await postBytes(u, {
          body: UTF8.encode(body),
          headers: { "content-type": "text/plain;charset=UTF-8" },
          signal: AbortSignal.timeout(PEER_TURN_TIMEOUT_MS),
        }).catch((e: Error) => {
          throw new Error(`bare_do: no answer within ${PEER_TURN_TIMEOUT_MS / 1000} s (${e.name}): the agent stalled; run the bench again`);
        });
        const text = new TextDecoder().decode(r.bytes);
        if (r.status !== 200) throw new Error(`bare_do: HTTP ${r.status}: ${text.slice(0, 200)}`);
        return text;
      };
      return {
        async turn(text) {
          const t = performance.now();
          const answer = await post(url, text);
          const ms = performance.now() - t;
          expectAnswer("bare_do", text, answer);
          return ms;
        },
        async seed(turns) {
          await post(`${url}?seed=${turns}`, "");
        },
        close: async () => {},
      };
    },
  };
}
