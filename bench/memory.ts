/**
 * `npm run bench:memory`: what a session object's in-memory journal (objects/session/session-cache.ts)
 * really takes, against the `heapEstimate` its memory budget counts. For each kind of journal, it
 * loads N records into a SessionCache and measures the heap they hold (after a full GC, before and
 * after), then prints the bytes per record measured and estimated, and measured ÷ estimated, which
 * must stay under 1 for the budget to bound the memory. It asserts nothing, and no test runs it.
 *
 * Runs in Node (`--expose-gc`), whose V8 lays out objects as workerd's does. The journal is an
 * array of encoded events behind the Journal's `read`, so only the cache's own memory is counted.
 * BENCH_MEMORY_RECORDS sets N (20,000). Each journal is measured in a process of its own.
 *
 * For journals of whole turns it also measures what a session keeps past its budget instead: the
 * latest-only parse (SessionCache.current on a budget of 0), per record and per execution.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { type Event, EventKind, EventSchema, type Message, MessageSchema } from "../proto/gen/agentsessions/v1/common_pb.js";
import { encodeBinary } from "../proto/binary-writer.js";
import { assistantText, userText } from "../proto/messages.js";
import type { Journal, StoredRecord } from "../objects/journal/journal.js";
import { heapEstimate, SessionCache } from "../objects/session/session-cache.js";

const N = Number(process.env.BENCH_MEMORY_RECORDS ?? 20_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc (npm run bench:memory does)");

const ev = (executionId: string, kind: EventKind, body: MessageInitShape<typeof EventSchema>["body"]): Event =>
  create(EventSchema, { executionId, kind, body });
const json = (fields: number, i: number): JsonObject =>
  Object.fromEntries(Array.from({ length: fields }, (_, k) => [`field_${k}`, k % 3 === 0 ? k * i : k % 3 === 1 ? `value ${k} of ${i}` : k % 2 === 0]));
const dataMessage = (i: number): Message => create(MessageSchema, { role: "user", parts: [{ part: { case: "data", value: { data: json(50, i) } } }] });

/** One turn of each kind of journal, as the records a host writes for it. */
const shapes: Record<string, (i: number) => Event[]> = {
  "echo chat turn": (i) => {
    const id = `exec-${i}`;
    return [
      ev(id, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 1n, harness: "chat" } }),
      ev(id, EventKind.EVENT_INPUT, { case: "message", value: userText(`turn ${i}`) }),
      ev(id, EventKind.EVENT_MODEL_CALL, { case: "model", value: { model: "echo", inputHash: "ab".repeat(32), id: `mc-${i}` } }),
      ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: assistantText(`echo:turn ${i}`) }),
      ev(id, EventKind.EVENT_USAGE, { case: "usage", value: { model: "echo", inputTokens: 3n, outputTokens: 4n } }),
      ev(id, EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } }),
    ];
  },
  "tool chat turn": (i) => {
    const id = `exec-${i}`;
    return [
      ev(id, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 1n, harness: "chat" } }),
      ev(id, EventKind.EVENT_INPUT, { case: "message", value: userText(`look up ${i}`) }),
      ev(id, EventKind.EVENT_MODEL_CALL, { case: "model", value: { model: "m", inputHash: "ab".repeat(32), id: `mc-${i}` } }),
      ev(id, EventKind.EVENT_TOOL_CALL, { case: "tool", value: { id: `t${i}`, tool: "lookup", args: json(10, i) } }),
      ev(id, EventKind.EVENT_TOOL_RESULT, { case: "result", value: { id: `t${i}`, output: json(40, i) } }),
      ev(id, EventKind.EVENT_MODEL_CALL, { case: "model", value: { model: "m", inputHash: "cd".repeat(32), id: `mc2-${i}` } }),
      ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: assistantText(`found ${i}`) }),
      ev(id, EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } }),
    ];
  },
  "1 KiB text messages": (i) => [
    ev(`exec-${i}`, EventKind.EVENT_INPUT, { case: "message", value: userText(`${i} ${"a".repeat(1024)}`) }),
    ev(`exec-${i}`, EventKind.EVENT_OUTPUT, { case: "message", value: assistantText(`${i} ${"b".repeat(1024)}`) }),
  ],
  "1 KiB text, not Latin-1": (i) => [ev(`exec-${i}`, EventKind.EVENT_OUTPUT, { case: "message", value: assistantText(`${i} ${"語".repeat(341)}`) })],
  "tool calls, 10 fields": (i) => [ev(`exec-${i}`, EventKind.EVENT_TOOL_CALL, { case: "tool", value: { id: `t${i}`, tool: "lookup", args: json(10, i) } })],
  "tool results, 200 fields": (i) => [ev(`exec-${i}`, EventKind.EVENT_TOOL_RESULT, { case: "result", value: { id: `t${i}`, output: json(200, i) } })],
  "data parts, 50 fields": (i) => [ev(`exec-${i}`, EventKind.EVENT_INPUT, { case: "message", value: dataMessage(i) })],
};

/** The Journal's read over stored bytes, one array per record as SQLite hands them. */
function journalOf(stored: Uint8Array[]): Journal {
  return {
    read(from: bigint, to: bigint, limit: number): StoredRecord[] {
      const hi = to <= 0n ? stored.length : Math.min(Number(to), stored.length);
      const out: StoredRecord[] = [];
      for (let seq = Number(from); seq <= hi && out.length < limit; seq++)
        out.push({ seq: BigInt(seq), prevHash: "" as never, hash: "" as never, fence: 1n, event: stored[seq - 1]!.slice() });
      return out;
    },
  } as unknown as Journal;
}

function heapUsed(): number {
  for (let i = 0; i < 4; i++) gc!();
  return process.memoryUsage().heapUsed;
}

const only = process.env.BENCH_MEMORY_ONLY;
if (only === undefined) {
  // Each journal in a process of its own: V8 lays out many objects of one shape differently once
  // a heap has held others (a 200-field JSON object took 4.5 KB or 15 KB by what came before).
  console.log(`bench memory: ${N.toLocaleString("en-US")} records per journal, Node ${process.version}`);
  console.log("journal                    | stored B/rec | measured B/rec | estimated B/rec | measured ÷ estimated");
  let worst = 0;
  const light: string[] = [];
  for (const name of Object.keys(shapes)) {
    const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
      env: { ...process.env, BENCH_MEMORY_ONLY: name },
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`bench memory: ${name} failed (exit ${r.status}): ${r.stderr}`);
    const m = JSON.parse(r.stdout) as { stored: number; measured: number; estimate: number; light: number; executions: number };
    if (m.executions > 1)
      light.push(`${name.padEnd(26)} | ${(m.light / N).toFixed(0).padStart(13)} | ${(m.light / m.executions).toFixed(0).padStart(16)} | ${m.executions}`);
    const ratio = m.measured / m.estimate;
    worst = Math.max(worst, ratio);
    const cell = (n: number, w: number) => (n / N).toFixed(0).padStart(w);
    console.log(`${name.padEnd(26)} | ${cell(m.stored, 12)} | ${cell(m.measured, 14)} | ${cell(m.estimate, 15)} | ${ratio.toFixed(2)}`);
  }
  console.log("\npast the budget: the latest-only parse kept instead");
  console.log("journal                    | B/record kept | B/execution kept | executions");
  for (const line of light) console.log(line);
  console.log(`bench memory ratio=${worst.toFixed(2)} target=<1`);
} else {
  const turn = shapes[only];
  if (!turn) throw new Error(`BENCH_MEMORY_ONLY names no journal: ${only}`);
  const stored: Uint8Array[] = [];
  let estimate = 0;
  for (let i = 0; stored.length < N; i++)
    for (const e of turn(i)) {
      if (stored.length === N) break;
      const bytes = encodeBinary(EventSchema, e);
      stored.push(bytes);
      estimate += heapEstimate(bytes.length, e);
    }
  const cache = new SessionCache(() => journalOf(stored), Number.POSITIVE_INFINITY);
  const before = heapUsed();
  if (cache.events().length !== N) throw new Error(`${only}: the cache did not keep all ${N} records`);
  const measured = heapUsed() - before;
  // The decoded records go; what the session keeps past its budget is the latest-only parse.
  const executions = cache.parsed().ok ? (cache.parsed() as { executions: unknown[] }).executions.length : 0;
  const kept = new SessionCache(() => journalOf(stored), 0);
  const base = heapUsed();
  const parse = kept.current();
  if (executions > 1 && !parse.ok) throw new Error(`${only}: the latest-only parse is malformed where the whole one is not`);
  const light = heapUsed() - base;
  // Used after both measurements, so neither cache is collected before them.
  void [cache.events(), kept.latestOpen()];
  console.log(JSON.stringify({ stored: stored.reduce((a, b) => a + b.length, 0), measured, estimate, light, executions }));
}
