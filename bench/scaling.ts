/**
 * `npm run bench:scaling`: what a turn costs as a session's history grows, against one `wrangler
 * dev`, in three phases (BENCH_SCALING_PHASES, default "history,growth,wake"). It asserts nothing; the
 * method, the machine and the figures are in docs/performance.md, "Scaling".
 *
 * history (bench/scaling-history.ts): an echo turn, a chat turn on the host's `echo` model and an
 * inputless Exec on sessions of 0, 5k, 10k and 20k records, each against a fresh session.
 *
 * growth: two tool-heavy chat sessions grown turn by turn, with and without bounded history
 * (docs/history.md). Every turn is a real chat turn over HTTP: the model (a stand-in HTTP server in this process)
 * calls the `lookup` tool, the host's executor webhook (another stand-in) answers ~1 KB, and the
 * model answers. One session runs with `max_history_tokens`, one without. At each checkpoint the
 * bench reports the median wall time of the turns just before it, the size of the last model
 * request the provider received (bytes and messages), and the journal's stored size per turn
 * (summed over Replay). The session without compaction stops at BENCH_SCALING_WHOLE_MAX turns:
 * each of its turns sends the whole conversation, so its cost grows with the session.
 *
 * wake (bench/scaling-wake.ts): the first echo turn and the first Cancel after a session's object
 * starts, on a 60k-record session against a one-turn one (BENCH_SCALING_WAKE_RECORDS,
 * BENCH_SCALING_WAKE_ROUNDS restarts, default 5).
 *
 * Sizes of the growth phase: BENCH_SCALING_TURNS (default 100,1000,10000), BENCH_SCALING_WHOLE_MAX (default 1000),
 * BENCH_SCALING_BUDGET (max_history_tokens, default 2000), BENCH_SCALING_WINDOW (turns timed per
 * checkpoint, default 20).
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toBinary } from "@bufbuild/protobuf";
import { LogRecordSchema } from "../proto/gen/agentsessions/v1/common_pb.js";
import { COMPACTION_PROMPT } from "../runtimes/builtin/chat.js";
import type { SessionsClient } from "../sdk/client.js";
import { fmt, median, retryProxy503, startBenchHost, summary, timed } from "./lib.js";
import { historyPhase } from "./scaling-history.js";
import { wakePhase } from "./scaling-wake.js";

const PHASES = new Set((process.env.BENCH_SCALING_PHASES ?? "history,growth,wake").split(",").map((s) => s.trim()));
const RECORDS = sizes("BENCH_SCALING_RECORDS", [0, 5000, 10_000, 20_000], 0);
const HISTORY_ROUNDS = Number(process.env.BENCH_SCALING_ROUNDS ?? 30);
const CHECKPOINTS = sizes("BENCH_SCALING_TURNS", [100, 1000, 10_000]);
const WHOLE_MAX = Number(process.env.BENCH_SCALING_WHOLE_MAX ?? 1000);
const BUDGET = Number(process.env.BENCH_SCALING_BUDGET ?? 2000);
const WINDOW = Number(process.env.BENCH_SCALING_WINDOW ?? 20);
const WAKE_RECORDS = sizes("BENCH_SCALING_WAKE_RECORDS", [60_000])[0]!;
const WAKE_ROUNDS = Number(process.env.BENCH_SCALING_WAKE_ROUNDS ?? 5);
const RESULT = "r".repeat(1000);

function sizes(env: string, fallback: number[], least = 1): number[] {
  const v = process.env[env];
  if (!v) return fallback;
  const xs = v.split(",").map((s) => Number(s.trim()));
  if (xs.some((x) => !Number.isInteger(x) || x < least))
    throw new Error(`${env} must be integers of at least ${least} separated by commas, got ${JSON.stringify(v)}`);
  return xs.sort((a, b) => a - b);
}

/** What the stand-in provider saw last, per session (its first user message names the session). */
interface Seen {
  bytes: number;
  messages: number;
  compactions: number;
  calls: number;
}

async function body(req: IncomingMessage): Promise<string> {
  let s = "";
  for await (const c of req) s += c;
  return s;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An OpenAI-compatible stand-in: a user turn gets a `lookup` call, a tool result an answer, a compaction a summary. */
async function startModel(seen: Map<string, Seen>): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    const text = await body(req);
    const b = JSON.parse(text) as { messages: { role: string; content: string | null }[] };
    const tag = /^\[(\w+)\]/.exec(b.messages.find((m) => m.role === "user")?.content ?? "")?.[1] ?? "?";
    const s = seen.get(tag) ?? { bytes: 0, messages: 0, compactions: 0, calls: 0 };
    seen.set(tag, s);
    s.calls++;
    const last = b.messages[b.messages.length - 1]!;
    let message: object;
    if (last.content === COMPACTION_PROMPT) {
      s.compactions++;
      message = { role: "assistant", content: `Summary ${s.compactions}: the user asked for lookups; every lookup answered; nothing is open.` };
    } else {
      s.bytes = text.length;
      s.messages = b.messages.length;
      message =
        last.role === "tool"
          ? { role: "assistant", content: "Here is what the lookup found." }
          : { role: "assistant", content: null, tool_calls: [{ id: `c${s.calls}`, type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }] };
    }
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ choices: [{ message }], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
  });
  return { url: await listen(server), server };
}

async function startExecutor(): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    await body(req);
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ output: { found: RESULT }, content: RESULT }));
  });
  return { url: await listen(server), server };
}

/** Stored bytes of the session's journal: every record as Replay serves it, binary. */
async function journalBytes(client: SessionsClient, uid: string): Promise<{ bytes: number; records: number }> {
  let bytes = 0;
  let records = 0;
  for await (const r of client.replay(uid)) {
    bytes += toBinary(LogRecordSchema, r).length;
    records++;
  }
  return { bytes, records };
}

interface Lane {
  name: string;
  tag: string;
  uid: string;
  config: Uint8Array;
  max: number;
  turns: number;
  times: number[];
}

async function main(): Promise<void> {
  const unknown = [...PHASES].filter((p) => p !== "history" && p !== "growth" && p !== "wake");
  if (unknown.length) throw new Error(`BENCH_SCALING_PHASES names unknown phases ${unknown.join(", ")}: use history, growth or wake, separated by commas`);
  const seen = new Map<string, Seen>();
  const model = await startModel(seen);
  const executor = await startExecutor();
  const { server, client } = await startBenchHost({ MODEL_BASE_URL: model.url, MODEL_DEFAULT: "m", MODEL_STREAM: "0", TOOL_EXECUTOR_URL: executor.url });
  const started = performance.now();
  try {
    if (PHASES.has("history")) {
      const calls = () => [...seen.values()].reduce((n, s) => n + s.calls, 0);
      const before = calls();
      await historyPhase(client, RECORDS, HISTORY_ROUNDS);
      console.log(`history: the model stand-in received ${calls() - before} requests (the echo model answers in the host)`);
    }
    if (PHASES.has("growth")) await growthPhase(client, seen);
    if (PHASES.has("wake")) await wakePhase(server, client, WAKE_RECORDS, WAKE_ROUNDS);
  } finally {
    await server.dispose();
    model.server.close();
    executor.server.close();
  }
  console.log(`(${fmt((performance.now() - started) / 1000)} s in all)`);
}

async function growthPhase(client: SessionsClient, seen: Map<string, Seen>): Promise<void> {
  const tools = [{ name: "lookup", description: "looks something up", input_schema: { type: "object", properties: { q: { type: "string" } } } }];
  const lane = async (name: string, tag: string, extra: object, max: number): Promise<Lane> => ({
    name,
    tag,
    uid: (await client.create({ name: `bench-scaling-${name}`, harness: "chat" })).metadata!.uid,
    config: new TextEncoder().encode(JSON.stringify({ system_prompt: "Answer briefly.", tools, ...extra })),
    max,
    turns: 0,
    times: [],
  });
  const last = CHECKPOINTS[CHECKPOINTS.length - 1]!;
  const lanes = [await lane("compacted", "c", { max_history_tokens: BUDGET }, last), await lane("whole", "w", {}, Math.min(WHOLE_MAX, last))];
  const rows: {
    lane: string;
    turns: number;
    ms: number;
    reqBytes: number;
    messages: number;
    bytesPerTurn: number;
    recordsPerTurn: number;
    compactions: number;
  }[] = [];
  const started = performance.now();
  // The lanes take turns, one turn each, so load and drift hit both alike while both run.
  for (let turn = 1; turn <= last; turn++) {
    for (const l of lanes) {
      if (turn > l.max) continue;
      const ms = await timed(() => retryProxy503(() => client.exec({ session: l.uid, inputs: [`[${l.tag}] turn ${turn}: look it up`], config: l.config })));
      l.turns = turn;
      l.times.push(ms);
      if (l.times.length > WINDOW) l.times.shift();
      if (CHECKPOINTS.includes(turn)) {
        const j = await journalBytes(client, l.uid);
        const s = seen.get(l.tag)!;
        rows.push({
          lane: l.name,
          turns: turn,
          ms: median(l.times),
          reqBytes: s.bytes,
          messages: s.messages,
          bytesPerTurn: j.bytes / turn,
          recordsPerTurn: j.records / turn,
          compactions: s.compactions,
        });
        const r = rows[rows.length - 1]!;
        console.log(
          `${r.lane} @${r.turns} turns: ${fmt(r.ms)} ms/turn (median of last ${l.times.length}), model request ${fmt(r.reqBytes / 1024)} KiB / ${r.messages} messages, journal ${fmt(r.bytesPerTurn / 1024, 2)} KiB/turn (${fmt(r.recordsPerTurn)} records/turn), ${r.compactions} compactions`,
        );
      }
    }
  }
  console.log(`growth: ${fmt((performance.now() - started) / 1000)} s (max_history_tokens ${BUDGET}; tool result ${RESULT.length} B per turn)`);
  for (const name of ["compacted", "whole"]) {
    const mine = rows.filter((r) => r.lane === name);
    if (mine.length < 2) continue;
    const a = mine[0]!;
    const b = mine[mine.length - 1]!;
    summary(`scaling-${name}`, b.ms / a.ms, name === "compacted" ? "<=2" : "grows", `turns=${a.turns}->${b.turns} request_bytes=${a.reqBytes}->${b.reqBytes}`);
  }
}

await main();
