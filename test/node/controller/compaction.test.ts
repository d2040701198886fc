/**
 * Bounded history (docs/history.md) in process: the chat harness with `max_history_tokens`
 * compacts through the live sink, later turns hand the model only the summary and what came
 * after, replay serves the summary with zero model calls, and recovery after the compaction call
 * never asks for it again. The same in a real host: test/node/integration/compaction.test.ts.
 */
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { EventKind, EventSchema, Lifecycle_Kind, MessageSchema, ToolResultSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText, textOf, userText } from "../../../proto/messages.js";
import { COMPACTION_PROMPT, createChatHarness, estimateTokens, parseChatConfig, SUMMARY_PREFIX } from "../../../runtimes/builtin/chat.js";
import { boundHistory, compactedThrough, compactionMarker, compactionOf } from "../../../runtimes/compaction.js";
import type { ModelRequest } from "../../../runtimes/harness-spi.js";
import { parseExecutions } from "../../../objects/controller/execution-log.js";
import type { TurnLog } from "../../../objects/controller/turn-writer.js";
import { SessionCache } from "../../../objects/session/session-cache.js";
import { fakeExecutor, forkLog, liveTurn, newLog, replayLog, resumeLog, scriptedModels, toolDeps, type Script } from "../support/controller-fixture.js";

const config = (o: object) => new TextEncoder().encode(JSON.stringify(o));
const isCompaction = (req: ModelRequest) => textOf(req.messages[req.messages.length - 1]) === COMPACTION_PROMPT;
/** Answers `summary #n` to a compaction request and `answer #n: <last text>` otherwise. */
const script: Script = (req, n) => ({
  message: assistantText(isCompaction(req) ? `summary #${n}` : `answer #${n}: ${textOf(req.messages[req.messages.length - 1])}`),
});
const texts = (req: ModelRequest) => req.messages.map((m) => `${m.role}:${textOf(m)}`);

describe("compaction points", () => {
  it("boundHistory: a history with a compaction point starts with its summary and marker, then the records after N", () => {
    const ev = (kind: EventKind, text: string, executionId = "e1"): Event =>
      create(EventSchema, { executionId, kind, body: { case: "message", value: userText(text) } });
    const journal = [ev(EventKind.EVENT_INPUT, "a"), ev(EventKind.EVENT_OUTPUT, "b"), ev(EventKind.EVENT_INPUT, "c", "e2")];
    journal.push(ev(EventKind.EVENT_OUTPUT, "summary", "e2"), compactionMarker("e2", 2n), ev(EventKind.EVENT_OUTPUT, "d", "e2"));
    const bounded = boundHistory(journal);
    expect(bounded.map((e) => (e.body.case === "message" ? textOf(e.body.value) : "marker"))).toEqual(["summary", "marker", "c", "d"]);
    expect(compactionOf(bounded)).toMatchObject({ throughSeq: 2n });
    expect(textOf(compactionOf(bounded)!.summary)).toBe("summary");
    // Without a marker, or with one that covers its own records, the history is whole.
    expect(boundHistory(journal.slice(0, 4))).toHaveLength(4);
    const bad = [...journal.slice(0, 4), compactionMarker("e2", 4n)];
    expect(boundHistory(bad)).toHaveLength(5);
    expect(
      compactedThrough(
        create(EventSchema, { kind: EventKind.EVENT_LIFECYCLE, body: { case: "lifecycle", value: { kind: Lifecycle_Kind.LIFECYCLE_BASELINE } } }),
      ),
    ).toBeUndefined();
  });

  it("chat config: max_history_tokens must be a positive integer", () => {
    expect(parseChatConfig(config({ max_history_tokens: 100 })).max_history_tokens).toBe(100);
    for (const v of [0, -1, 1.5, "100"])
      expect(() => parseChatConfig(config({ max_history_tokens: v }))).toThrow(/max_history_tokens must be a positive integer/);
  });

  it("chat: past max_history_tokens a turn compacts first; later turns send only the summary and the records after it", async () => {
    const fx = newLog();
    const models = scriptedModels(script);
    const chat = createChatHarness();
    const cfg = config({ system_prompt: "be brief", max_history_tokens: 30 });
    for (let i = 1; i <= 6; i++)
      expect(await liveTurn(fx, chat, models, [`message number ${i} with some words`], { config: cfg })).toEqual({ kind: "completed" });

    const compactions = models.requests.filter(isCompaction);
    expect(compactions.length).toBeGreaterThan(0);
    const markers = fx.events().filter((e) => compactedThrough(e.event) !== undefined);
    expect(markers).toHaveLength(compactions.length);
    // Every marker follows its summary and covers exactly the records before its execution.
    for (const m of markers) {
      const ex = parseExecutions(fx.events());
      const exec = ex.ok ? ex.executions.find((x) => x.id === m.event.executionId)! : undefined;
      expect(compactedThrough(m.event)).toBe(exec!.firstSeq - 1n);
      expect(fx.events()[Number(m.seq) - 2]!.event.kind).toBe(EventKind.EVENT_OUTPUT);
    }
    // The last answer request: system prompt, the latest summary, then only what followed it.
    const last = models.requests[models.requests.length - 1]!;
    expect(isCompaction(last)).toBe(false);
    const summaries = last.messages.filter((m) => textOf(m).startsWith(SUMMARY_PREFIX));
    expect(summaries).toHaveLength(1);
    expect(texts(last)[0]).toBe("system:be brief");
    expect(texts(last)[1]).toMatch(/^system:Summary of the conversation before this point:\n\nsummary #\d+$/);
    expect(texts(last).some((t) => t.includes("message number 1 "))).toBe(false);
    expect(texts(last)[texts(last).length - 1]).toBe("user:message number 6 with some words");

    // Replay: the same requests (input hashes), every summary from the journal, no model call.
    const replayModels = scriptedModels(script);
    const rep = await replayLog(fx, chat, replayModels);
    expect(rep).toMatchObject({ ok: true, modelCalls: 0, executions: 6 });
    expect(replayModels.calls).toBe(0);
  });

  it("chat: a crash right after the compaction's summary recovers with no second compaction call", async () => {
    const fx = newLog();
    const chat = createChatHarness();
    const cfg = config({ max_history_tokens: 5 });
    await liveTurn(fx, chat, scriptedModels(script), ["first turn, long enough to pass the budget"], { config: cfg });
    await liveTurn(fx, chat, scriptedModels(script), ["second"], { config: cfg });
    const kinds = fx.kinds();
    expect(kinds.slice(5)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "LIFECYCLE", "MODEL_CALL", "OUTPUT", "END"]);
    const marker = kinds.lastIndexOf("LIFECYCLE") + 1;
    fx.truncateAfter(marker + 1); // the turn's answer call was recorded, then the host died

    const models = scriptedModels(script);
    const r = await resumeLog(fx, chat, { models });
    expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(models.requests.filter(isCompaction)).toHaveLength(0);
    expect(models.calls).toBe(1);
    expect(fx.kinds().slice(5)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "LIFECYCLE", "MODEL_CALL", "OUTPUT", "END"]);
  });

  it("compact: a harness with no history to compact fails the turn FAILED_PRECONDITION and writes no model call", async () => {
    const fx = newLog();
    const h = {
      describe: () => createChatHarness().describe(),
      run: async (_s: unknown, sink: { compact?: (r: ModelRequest) => Promise<unknown> }) =>
        void (await sink.compact!({ model: "", messages: [userText("x")] })),
    };
    const out = await liveTurn(fx, h, scriptedModels(script), ["hi"]);
    expect(out).toMatchObject({ kind: "failed", code: 9, message: expect.stringContaining("nothing to compact") });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "ERROR"]);
  });

  it("chat: 2,000 turns with tool calls keep every answer request under the budget plus one turn; replay makes zero model calls", async () => {
    const fx = newLog();
    const chat = createChatHarness();
    const budget = 400;
    const cfg = config({ max_history_tokens: budget, tools: [{ name: "lookup" }] });
    // Each turn: a lookup call, its receipt (~250 tokens of result), then an answer.
    const models = scriptedModels((req, n) => {
      if (isCompaction(req)) return { message: assistantText(`summary #${n}`) };
      const last = req.messages[req.messages.length - 1]!;
      if (last.role === "tool") return { message: assistantText(`answer #${n}`) };
      return {
        message: create(MessageSchema, {
          role: "assistant",
          parts: [{ part: { case: "toolCall", value: { id: `c${n}`, tool: "lookup", args: { q: "x" } } } }],
        }),
      };
    });
    const tools = toolDeps(fakeExecutor(() => create(ToolResultSchema, { id: "r", output: { found: "r".repeat(1000) } })).executor);
    // The session object's in-memory journal (session-cache.ts), as a real host keeps it: each
    // turn reads its bounded history from memory instead of decoding the whole journal again.
    const cache = new SessionCache(() => fx.journal);
    const log: TurnLog = {
      ...fx.log,
      append: (events, opts) => {
        const r = fx.log.append(events, opts);
        if (r.ok) cache.appended(r.records);
        return r;
      },
      history: (to) => cache.history(to),
    };
    const session = { ...fx, log } as typeof fx;
    for (let i = 1; i <= 2000; i++) expect(await liveTurn(session, chat, models, [`turn ${i}`], { config: cfg, tools })).toEqual({ kind: "completed" });
    const answers = models.requests.filter((r) => !isCompaction(r));
    const perTurn = estimateTokens(answers[answers.length - 1]!.messages.slice(-3));
    for (const r of answers) expect(estimateTokens(r.messages)).toBeLessThanOrEqual(budget + 2 * perTurn);
    expect(models.requests.filter(isCompaction).length).toBeGreaterThan(100);

    const replayModels = scriptedModels(script);
    const rep = await replayLog(fx, chat, replayModels);
    expect(rep).toMatchObject({ ok: true, modelCalls: 0, executions: 2000 });
  }, 300_000);

  it("fork: children forked before and after a compaction point each run a turn and replay exactly", async () => {
    const parent = newLog();
    const chat = createChatHarness();
    const cfg = config({ max_history_tokens: 5 });
    for (const text of ["one, long enough to pass the budget", "two", "three"]) await liveTurn(parent, chat, scriptedModels(script), [text], { config: cfg });
    const markerSeq = parent.events().find((e) => compactedThrough(e.event) !== undefined)!.seq;
    for (const at of [Number(markerSeq) - 3, Number(parent.journal.head().seq)]) {
      const child = forkLog(parent, at);
      const models = scriptedModels(script);
      expect(await liveTurn(child, chat, models, ["in the child"], { config: cfg })).toEqual({ kind: "completed" });
      const answer = models.requests.filter((r) => !isCompaction(r)).at(-1)!;
      expect(texts(answer).at(-1)).toBe("user:in the child");
      expect(await replayLog(child, chat, scriptedModels(script))).toMatchObject({ ok: true, modelCalls: 0 });
    }
  });
});
