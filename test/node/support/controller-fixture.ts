/**
 * In-process fixtures for controller tests: a journal on sql.js seen through the controller's
 * TurnLog, a model invoker with scripted answers that counts calls, and small harnesses.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import {
  EventSchema,
  EventKind,
  Mediation,
  ToolCallSchema,
  ToolResultSchema,
  type Event,
  type ToolCall,
  type ToolResult,
} from "../../../proto/gen/agentsessions/v1/common_pb.js";
import type { ToolExecutor, ToolRequest } from "../../../objects/controller/tools.js";
import { HarnessDescriptorSchema, Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { assistantText, textOf, userText } from "../../../proto/messages.js";
import type { Harness, ModelRequest, ModelResponse } from "../../../runtimes/harness-spi.js";
import { ModelProviderError } from "../../../objects/controller/errors.js";
import type { LoggedEvent } from "../../../objects/controller/execution-log.js";
import type { DescribeHarness } from "../../../objects/controller/identity.js";
import { lifecycleEvent, Lifecycle_Kind } from "../../../objects/controller/events.js";
import { runLiveTurn, type TurnDeps, type TurnOutcome } from "../../../objects/controller/live-turn.js";
import type { ModelInvoker } from "../../../objects/controller/models.js";
import { replayJournal } from "../../../objects/controller/replay.js";
import { resumeLatest, type ResumeOptions } from "../../../objects/controller/resume.js";
import type { TurnLog } from "../../../objects/controller/turn-writer.js";
import { Journal, JOURNAL_SCHEMA } from "../../../objects/journal/journal.js";
import { createTestDb } from "./sqljs-db.js";

/** A journal on a fresh sql.js database, or on a copy of `bytes` (a reopened snapshot of another one's `db.raw.export()`). */
export function newLog(bytes?: Uint8Array) {
  const db = createTestDb(bytes);
  if (!bytes) for (const s of JOURNAL_SCHEMA) db.query(s);
  // A crash loses the object's memory too: truncateAfter swaps in a fresh Journal (no caches).
  let journal = new Journal(db);
  const log: TurnLog = {
    append: (events, opts) => journal.append(events, opts),
    head: () => journal.head(),
    events: (from, to) => journal.read(from, to, 1_000_000).map((r) => fromBinary(EventSchema, r.event)),
  };
  const events = (): LoggedEvent[] => journal.read(1n, 0n, 1_000_000).map((r) => ({ seq: r.seq, event: fromBinary(EventSchema, r.event) }));
  const kinds = () => events().map((e) => EventKind[e.event.kind].replace(/^EVENT_/, ""));
  return {
    db,
    log,
    events,
    kinds,
    get journal() {
      return journal;
    },
    /** Simulates a crash that lost every record after `seq` (and the process's memory). */
    truncateAfter(seq: number): void {
      db.query("DELETE FROM events WHERE seq > ?", seq);
      journal = new Journal(db);
    },
  };
}

/** "Pod A dies": a fresh process opens the same database file (a byte copy; no caches survive). */
export function reopenLog(fx: ReturnType<typeof newLog>) {
  return newLog(fx.db.raw.export());
}

/**
 * A fork child at the log level, as objects/session/fork.ts builds one: the parent's records
 * 1..atSeq copied verbatim, then LIFECYCLE(FORK, "parent@atSeq") under the child's own fence.
 */
export function forkLog(parent: ReturnType<typeof newLog>, atSeq: number) {
  const child = newLog();
  const seeded = child.journal.seed(parent.journal.read(1n, BigInt(atSeq), 1_000_000));
  if (!seeded.ok) throw new Error(`fork seed: ${seeded.reason}`);
  const marker = lifecycleEvent(Lifecycle_Kind.LIFECYCLE_FORK, { detail: `parent@${atSeq}` });
  const r = child.journal.append([marker], { expectedSeq: BigInt(atSeq), fence: 0n, mintFence: true });
  if (!r.ok) throw new Error(`fork marker: ${r.reason}`);
  return child;
}

export type Script = (req: ModelRequest, call: number) => ModelResponse | Error;

/** A model invoker answering from a script; every call is counted (I1 checks read `calls`). */
export function scriptedModels(script: Script): ModelInvoker & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    requests,
    resolve: (m) => m || "scripted",
    serves: () => true,
    async invoke(req) {
      requests.push(req);
      const out = script(req, requests.length);
      if (out instanceof Error) throw out;
      return out;
    },
    get calls() {
      return requests.length;
    },
  };
}

/** Answers `echo:<last text>`; nondeterministic variants append the call number. */
export const echoScript: Script = (req) => ({ message: assistantText("echo:" + textOf(req.messages[req.messages.length - 1])) });
export const counterScript: Script = (_req, n) => ({ message: assistantText(`answer #${n}`) });
export const failingScript =
  (failures: number, then: Script = echoScript): Script =>
  (req, n) =>
    n <= failures ? new ModelProviderError(`provider unavailable (attempt ${n})`) : then(req, n);

export function descriptor(id: string, version = "1", resumability = Resumability.STATELESS_REPLAY) {
  return create(HarnessDescriptorSchema, { id, version, capabilities: { resumability } });
}

/** One model call with the last input's text (like echo), then optional extra steps. */
export function modelHarness(id = "h", version = "1", after?: (sink: Parameters<Harness["run"]>[1]) => Promise<void>): Harness {
  return {
    describe: () => descriptor(id, version),
    async run(start, sink) {
      await sink.model({ model: "m", messages: [userText(textOf(start.inputs[start.inputs.length - 1]))] });
      if (after) await after(sink);
    },
  };
}

export function describer(harnesses: Record<string, Harness>): DescribeHarness {
  return async (name) => {
    const h = harnesses[name];
    return h ? { name, harness: h, descriptor: await h.describe() } : undefined;
  };
}

export async function liveTurn(
  fx: ReturnType<typeof newLog>,
  harness: Harness,
  models: ModelInvoker,
  inputs: string[],
  o: { name?: string; executionId?: string; config?: Uint8Array; cursor?: bigint; tools?: TurnDeps["tools"] } = {},
): Promise<TurnOutcome> {
  return runLiveTurn(
    {
      sessionUid: "sess-000000000000000000000001",
      executionId: o.executionId ?? `exec${Math.random().toString(16).slice(2, 14)}`,
      harnessName: o.name ?? "h",
      harness,
      descriptor: await harness.describe(),
      inputs: inputs.map(userText),
      config: o.config ?? new Uint8Array(),
      resumeFromSeq: o.cursor ?? 0n,
      signal: new AbortController().signal,
    },
    { log: fx.log, models, observe: () => undefined, tools: o.tools },
  );
}

export function outputTexts(events: LoggedEvent[]): string[] {
  return events.flatMap((e) => (e.event.kind === EventKind.EVENT_OUTPUT && e.event.body.case === "message" ? [textOf(e.event.body.value)] : []));
}

export type { Event };

/** An in-process tool executor that dedups by (session, key) like a real one must, and counts. */
export function fakeExecutor(
  behave: (call: ToolCall, attempt: number) => ToolResult | Error = (c) =>
    create(ToolResultSchema, { id: "executor-chosen", output: { echoed: c.args ?? null } }),
) {
  const effects = new Map<string, ToolResult>();
  const calls: ToolRequest[] = [];
  const executor: ToolExecutor = {
    async execute(req) {
      calls.push(req);
      const key = `${req.sessionUid}/${req.call.idempotencyKey}`;
      const done = effects.get(key);
      if (done) return done;
      const out = behave(req.call, calls.length);
      if (out instanceof Error) throw out;
      effects.set(key, out);
      return out;
    },
  };
  return { executor, calls, effects };
}

export function toolDeps(executor: ToolExecutor | undefined, extra: Partial<NonNullable<TurnDeps["tools"]>> = {}): NonNullable<TurnDeps["tools"]> {
  return {
    sessionUid: "sess-000000000000000000000001",
    tools: executor,
    approvalsAllowed: true,
    now: () => 1_700_000_000_000,
    knownCallIds: new Set(),
    ...extra,
  };
}

export function toolCall(init: Partial<Pick<ToolCall, "id" | "tool" | "args" | "mediation" | "idempotencyKey">>): ToolCall {
  return create(ToolCallSchema, { id: "c1", tool: "t", mediation: Mediation.CONTROLLER_MEDIATED, idempotencyKey: "k1", ...init });
}

/** Makes the given tool calls in order, then outputs what came back (or swallows errors when asked). */
export function toolHarness(calls: ToolCall[], o: { swallow?: boolean; id?: string } = {}): Harness {
  return {
    describe: () => descriptor(o.id ?? "h"),
    async run(_s, sink) {
      const out: string[] = [];
      for (const c of calls) {
        try {
          const r = await sink.toolCall(c);
          out.push(`${c.tool}:${r.isError ? "error" : "ok"}:${r.code}`);
        } catch (e) {
          if (!o.swallow) throw e;
          out.push(`${c.tool}:refused`);
        }
      }
      await sink.output(out.join(","));
    },
  };
}

/** The session uid the controller tests run under. */
export const SESSION_UID = "sess-000000000000000000000001";

/** Appends records as another writer would (no validation beyond the journal's own), minting a fence. */
export function appendRaw(fx: ReturnType<typeof newLog>, events: Event[]): void {
  const r = fx.log.append(events, { fence: 0n, mintFence: true });
  if (!r.ok) throw new Error(r.reason);
}

/** resumeLatest over a fixture log with harness "h" and the echo model; `o` overrides any option. */
export function resumeLog(fx: ReturnType<typeof newLog>, h: Harness, o: Partial<ResumeOptions> = {}) {
  return resumeLatest(fx.events(), {
    sessionUid: SESSION_UID,
    log: fx.log,
    mintFence: () => fx.journal.mintFence(),
    describe: describer({ h }),
    defaultHarness: "h",
    models: scriptedModels(echoScript),
    observe: () => undefined,
    signal: new AbortController().signal,
    ...o,
  });
}

/** replayJournal over a fixture log with harness "h". */
export function replayLog(fx: ReturnType<typeof newLog>, h: Harness, models: ModelInvoker = scriptedModels(echoScript)) {
  return replayJournal(fx.events(), { sessionUid: SESSION_UID, describe: describer({ h }), defaultHarness: "h", models });
}
