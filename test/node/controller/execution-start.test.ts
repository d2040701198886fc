/**
 * The execution start marker (docs/behaviour.md §1.4, §2.4-2.6, §2.9; checklist §8.9 #48-#50, #52-#54):
 * every Start a harness sees comes from the journal (live, on replay after a reopen, on resume, in
 * a fork child), the marker is committed and observed before Run, a malformed marker stops Replay
 * and Resume before any harness runs, and a refused first append leaves nothing behind.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, MessageSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { textOf, userText } from "../../../proto/messages.js";
import type { Harness, HarnessStart } from "../../../runtimes/harness-spi.js";
import type { AppendedRecord } from "../../../objects/journal/journal.js";
import { runLiveTurn } from "../../../objects/controller/live-turn.js";
import type { ModelInvoker } from "../../../objects/controller/models.js";
import type { TurnLog } from "../../../objects/controller/turn-writer.js";
import {
  counterScript,
  descriptor,
  echoScript,
  fakeExecutor,
  forkLog,
  liveTurn,
  newLog,
  outputTexts,
  reopenLog,
  scriptedModels,
  toolCall,
  toolDeps,
  replayLog as replay,
  resumeLog,
  SESSION_UID,
} from "../support/controller-fixture.js";

const uid = SESSION_UID;
type Fx = ReturnType<typeof newLog>;

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

/** Everything a Start carries, byte-exact (inputs and history as their encodings). */
interface SeenStart {
  executionId: string;
  config: string;
  cursor: bigint;
  inputs: string[];
  history: string[];
}
function snapshot(start: HarnessStart): SeenStart {
  return {
    executionId: start.executionId,
    config: hex(start.config),
    cursor: start.resumeFromSeq,
    inputs: start.inputs.map((m) => hex(toBinary(MessageSchema, m))),
    history: start.history.map((e) => hex(toBinary(EventSchema, e))),
  };
}

/** Records its Start, then one model call with the last input's text (or "inputless"). */
function probe(seen: SeenStart[], runs = { n: 0 }): Harness {
  return {
    describe: () => descriptor("h"),
    async run(start, sink) {
      runs.n++;
      seen.push(snapshot(start));
      const text = start.inputs.length > 0 ? textOf(start.inputs[start.inputs.length - 1]) : "inputless";
      await sink.model({ model: "m", messages: [userText(text)] });
    },
  };
}

function resume(fx: Fx, h: Harness, models: ModelInvoker, extra: { tools?: ReturnType<typeof toolDeps>; fences?: { n: number } } = {}) {
  return resumeLog(fx, h, { models, tools: extra.tools, mintFence: () => (extra.fences && extra.fences.n++, fx.journal.mintFence()) });
}

/** Appends hand-made records (a journal someone else wrote) under a fresh fence. */
function write(fx: Fx, ...events: Event[]): void {
  const r = fx.journal.append(events, { fence: 0n, mintFence: true });
  if (!r.ok) throw new Error(r.reason);
}
const marker = (id: string, inputCount?: bigint, body = true) =>
  create(EventSchema, { executionId: id, kind: EventKind.EVENT_EXECUTION_START, ...(body ? { body: { case: "executionStart", value: { inputCount } } } : {}) });
const input = (id: string, text = "x") =>
  create(EventSchema, { executionId: id, kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText(text) } });
const output = (id: string, text = "o") =>
  create(EventSchema, { executionId: id, kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: userText(text) } });
const end = (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } });

const records = (fx: Fx) => fx.journal.read(1n, 0n, 1_000_000);

describe("the execution start marker (checklist §8.9)", () => {
  it("replay after a reopen reproduces every live Start (config bytes, cursor, inputs, history) from the journal, writes nothing and verifies; forks at the first END and at head inherit the Starts and the prefix hashes (checklist §8.9 #48)", async () => {
    const fx = newLog();
    const live: SeenStart[] = [];
    const models = scriptedModels(counterScript); // nondeterministic: replay must serve, not recompute
    const turns = [
      { inputs: ["a", "b"], config: new Uint8Array([0, 255, 32, 10, 9]), cursor: 7n },
      { inputs: [], config: new TextEncoder().encode('{"k":1}'), cursor: 0n },
      { inputs: ["c"], config: new Uint8Array(), cursor: 12n },
    ];
    for (const t of turns) expect(await liveTurn(fx, probe(live), models, t.inputs, { config: t.config, cursor: t.cursor })).toEqual({ kind: "completed" });
    expect(live.map((s) => [s.config, s.cursor, s.inputs.length, s.history.length])).toEqual([
      ["00ff200a09", 7n, 2, 0],
      [hex(turns[1]!.config), 0n, 0, 6],
      ["", 12n, 1, 10],
    ]);
    expect(new Set(live.map((s) => s.executionId)).size).toBe(3);

    // Pod A dies; B opens the same file. The replay API takes no Start values at all: only the journal.
    const b = reopenLog(fx);
    const head = b.journal.head();
    const replayed: SeenStart[] = [];
    const replayModels = scriptedModels(counterScript);
    const r = await replay(b, probe(replayed), replayModels);
    expect(r).toMatchObject({ ok: true, outputs: ["answer #1", "answer #2", "answer #3"], modelCalls: 0, executions: 3 });
    expect(replayModels.calls).toBe(0);
    expect(replayed).toEqual(live);
    expect(b.journal.head()).toEqual(head);
    expect(b.journal.verify()).toMatchObject({ ok: true });

    // Forks at the first END (seq 6) and at head (seq 15).
    const parent = records(b);
    expect(head.seq).toBe(15n);
    for (const [at, inherited] of [
      [6, 1],
      [15, 3],
    ] as const) {
      const child = forkLog(b, at);
      const got = records(child);
      expect(got).toHaveLength(at + 1);
      expect(got.slice(0, at).map((x) => x.hash)).toEqual(parent.slice(0, at).map((x) => x.hash));
      expect(got[at]!.prevHash).toBe(parent[at - 1]!.hash);
      expect(child.kinds().at(-1)).toBe("LIFECYCLE");
      expect(child.journal.verify()).toMatchObject({ ok: true });
      const seen: SeenStart[] = [];
      const cr = await replay(child, probe(seen), replayModels);
      expect(cr, `fork at ${at}`).toMatchObject({ ok: true, outputs: ["answer #1", "answer #2", "answer #3"].slice(0, inherited), modelCalls: 0 });
      expect(seen).toEqual(live.slice(0, inherited));
      expect(child.journal.head().seq).toBe(BigInt(at + 1));
    }
    expect(records(b)).toEqual(parent);
  });

  /** Model call, then a tool call; `crash` makes it stop there forever (the process dies). */
  function modelThenTool(seen: SeenStart[], crash?: { reached: () => void }): Harness {
    return {
      describe: () => descriptor("h"),
      async run(start, sink) {
        seen.push(snapshot(start));
        const text = start.inputs.length > 0 ? textOf(start.inputs[0]) : "inputless";
        await sink.model({ model: "m", messages: [userText(text)] });
        await sink.toolCall(toolCall({ id: "c1", tool: "t", idempotencyKey: "k1" }));
        if (crash) {
          crash.reached();
          await new Promise<never>(() => undefined);
        }
        await sink.output("continued");
      },
    };
  }

  const config = new Uint8Array([0, 255, 32, 10, 9]);
  for (const v of [
    { name: "inputful with config", inputs: ["hi"], config, prompt: "hi" },
    { name: "inputless with config", inputs: [], config, prompt: "inputless" },
    { name: "default config", inputs: ["hi"], config: undefined, prompt: "hi" },
  ]) {
    it(`resume after a reopen (${v.name}): an execution cut after a model call and a tool call gets the identical Start; model and tool each ran once in total; a second Resume is a no-op; replay repeats nothing (checklist §8.9 #49)`, async () => {
      const fx = newLog();
      const ex = fakeExecutor(); // dedups durably by (session, key), counting every call it gets
      const liveModels = scriptedModels(echoScript);
      const liveSeen: SeenStart[] = [];
      let reached!: () => void;
      const cut = new Promise<void>((ok) => (reached = ok));
      void liveTurn(fx, modelThenTool(liveSeen, { reached }), liveModels, v.inputs, { config: v.config, cursor: 9n, tools: toolDeps(ex.executor) });
      await cut;
      // The process dies here: B opens the file as it was, with both effects and their results.
      const b = reopenLog(fx);
      const prefix = [...(v.inputs.length ? ["INPUT"] : []), "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT"];
      expect(b.kinds()).toEqual(["EXECUTION_START", ...prefix]);

      const seen: SeenStart[] = [];
      const models = scriptedModels(echoScript);
      const r = await resume(b, modelThenTool(seen), models, { tools: toolDeps(ex.executor) });
      expect(r).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
      expect(seen).toEqual(liveSeen);
      expect(seen[0]!.config).toBe(hex(v.config ?? new Uint8Array()));
      expect(liveModels.calls + models.calls).toBe(1);
      expect(ex.calls).toHaveLength(1);
      expect(b.kinds()).toEqual(["EXECUTION_START", ...prefix, "OUTPUT", "END"]);
      expect(outputTexts(b.events())).toEqual([`echo:${v.prompt}`, "continued"]);

      const head = b.journal.head();
      expect(await resume(b, modelThenTool(seen), models, { tools: toolDeps(ex.executor) })).toEqual({ kind: "noop" });
      expect(b.journal.head()).toEqual(head);
      expect(seen).toHaveLength(1);

      const replayed: SeenStart[] = [];
      const rep = await replay(b, modelThenTool(replayed), models);
      expect(rep).toMatchObject({ ok: true, outputs: [`echo:${v.prompt}`, "continued"], modelCalls: 0 });
      expect(replayed).toEqual(liveSeen);
      expect(models.calls).toBe(0);
      expect(ex.calls).toHaveLength(1);
      expect(b.journal.head()).toEqual(head);
      expect(b.journal.verify()).toMatchObject({ ok: true });
    });
  }

  it("default, empty, config-only, cursor-only and inputless execs: EXECUTION_START is committed and observed before Run with the exact config, cursor and input count; the Start's history is empty; replay reproduces the Starts (checklist §8.9 #50)", async () => {
    // In proto3 an absent and an empty `bytes` field are the same value: "default" and "empty" both record none.
    const variants = [
      { name: "default", inputs: ["hi"] },
      { name: "empty", inputs: ["hi"], config: new Uint8Array(), cursor: 0n },
      { name: "config-only", inputs: ["hi"], config: new Uint8Array([1, 0, 255]) },
      { name: "cursor-only", inputs: ["hi", "there"], cursor: 99n },
      { name: "inputless", inputs: [] as string[], config: new Uint8Array([7]) },
    ];
    for (const v of variants) {
      const fx = newLog();
      const observed: AppendedRecord[] = [];
      const atRun: { durable: string[]; observed: string[]; marker?: Event; history: number }[] = [];
      const live: SeenStart[] = [];
      const inner = probe(live);
      const h: Harness = {
        describe: () => descriptor("h"),
        async run(start, sink) {
          // Durable: a byte copy of the database file as it is now holds the records.
          const durable = reopenLog(fx).events();
          atRun.push({
            durable: durable.map((e) => `${e.seq}:${EventKind[e.event.kind]}`),
            observed: observed.map((x) => `${x.seq}:${EventKind[x.decoded.kind]}`),
            marker: durable[0]?.event,
            history: start.history.length,
          });
          await inner.run(start, sink);
        },
      };
      const models = scriptedModels(echoScript);
      const out = await runLiveTurn(
        {
          sessionUid: uid,
          executionId: "0000000000000e50",
          harnessName: "h",
          harness: h,
          descriptor: await h.describe(),
          inputs: v.inputs.map(userText),
          config: v.config ?? new Uint8Array(),
          resumeFromSeq: v.cursor ?? 0n,
          signal: new AbortController().signal,
        },
        { log: fx.log, models, observe: (r) => void observed.push(...r) },
      );
      expect(out, v.name).toEqual({ kind: "completed" });
      expect(atRun, v.name).toHaveLength(1);
      const expected = ["1:EVENT_EXECUTION_START", ...v.inputs.map((_, i) => `${i + 2}:EVENT_INPUT`)];
      expect(atRun[0]!.durable, v.name).toEqual(expected);
      expect(atRun[0]!.observed, v.name).toEqual(expected);
      const m = atRun[0]!.marker!;
      expect(m.body.case, v.name).toBe("executionStart");
      if (m.body.case !== "executionStart") continue;
      expect(hex(m.body.value.config), v.name).toBe(hex(v.config ?? new Uint8Array()));
      expect(m.body.value.resumeFromSeq, v.name).toBe(v.cursor ?? 0n);
      expect(m.body.value.inputCount, v.name).toBe(BigInt(v.inputs.length));
      expect(atRun[0]!.history, v.name).toBe(0);
      expect(live[0]!.config, v.name).toBe(hex(v.config ?? new Uint8Array()));

      const replayed: SeenStart[] = [];
      const r = await replay(fx, probe(replayed));
      expect(r, v.name).toMatchObject({ ok: true, modelCalls: 0, executions: 1 });
      expect(replayed, v.name).toEqual(live);
    }
  });

  it("a fork cut at the marker or between inputs cannot be resumed (invalid, nothing appended, harness not run); a fork after all inputs, or of an explicit zero-input turn, resumes with the original config, cursor and inputs and empty history (checklist §8.9 #52)", async () => {
    const parent = newLog();
    const live: SeenStart[] = [];
    const config = new Uint8Array([0, 255, 9]);
    await liveTurn(parent, probe(live), scriptedModels(echoScript), ["a", "b"], { config, cursor: 5n });
    expect(parent.kinds()).toEqual(["EXECUTION_START", "INPUT", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);

    for (const at of [1, 2]) {
      const child = forkLog(parent, at);
      const before = records(child);
      const runs = { n: 0 };
      const fences = { n: 0 };
      const models = scriptedModels(echoScript);
      const r = await resume(child, probe([], runs), models, { fences });
      expect(r, `fork at ${at}`).toMatchObject({ kind: "invalid", incomplete: true });
      expect(runs.n).toBe(0);
      expect(models.calls).toBe(0);
      expect(fences.n).toBe(0);
      expect(records(child)).toEqual(before);
    }

    const child = forkLog(parent, 3);
    const seen: SeenStart[] = [];
    const models = scriptedModels(echoScript);
    expect(await resume(child, probe(seen), models)).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(seen).toEqual(live);
    expect(seen[0]).toMatchObject({ config: "00ff09", cursor: 5n, history: [] });
    expect(seen[0]!.inputs).toHaveLength(2);
    expect(models.calls).toBe(1);
    expect(child.kinds()).toEqual(["EXECUTION_START", "INPUT", "INPUT", "LIFECYCLE", "MODEL_CALL", "OUTPUT", "END"]);

    // An explicit zero-input turn forked right after its marker is complete.
    const p2 = newLog();
    const live2: SeenStart[] = [];
    await liveTurn(p2, probe(live2), scriptedModels(echoScript), [], { config, cursor: 8n });
    const c2 = forkLog(p2, 1);
    const seen2: SeenStart[] = [];
    expect(await resume(c2, probe(seen2), scriptedModels(echoScript))).toMatchObject({ kind: "redriven", outcome: { kind: "completed" } });
    expect(seen2).toEqual(live2);
    expect(seen2[0]).toMatchObject({ config: "00ff09", cursor: 8n, inputs: [], history: [] });
  });

  it("a bodyless marker, a marker that is not first in its execution, or two markers make both Replay and Resume fail as an invalid log without running the harness (checklist §8.9 #53)", async () => {
    const malformed: [string, (id: string) => Event[]][] = [
      ["bodyless marker", (id) => [marker(id, undefined, false), input(id)]],
      ["marker not first", (id) => [input(id), marker(id, 1n)]],
      ["two markers", (id) => [marker(id, 1n), marker(id, 1n), input(id)]],
    ];
    for (const [name, recs] of malformed) {
      // Replay: a valid completed turn first, then the malformed one, completed.
      const fx = newLog();
      await liveTurn(fx, probe([]), scriptedModels(echoScript), ["ok"]);
      write(fx, ...recs("bad"), output("bad"), end("bad"));
      const head = fx.journal.head();
      const runs = { n: 0 };
      const models = scriptedModels(echoScript);
      const r = await replay(fx, probe([], runs), models);
      expect(r.ok, name).toBe(false);
      expect(r.divergence, name).toMatch(/^invalid execution log/);
      expect(runs.n, name).toBe(0);
      expect(fx.journal.head(), name).toEqual(head);

      // Resume: the malformed execution is the interrupted latest one.
      const fy = newLog();
      write(fy, ...recs("bad"));
      const before = records(fy);
      const fences = { n: 0 };
      const out = await resume(fy, probe([], runs), models, { fences });
      expect(out, name).toMatchObject({ kind: "invalid", incomplete: false });
      expect(runs.n, name).toBe(0);
      expect(fences.n, name).toBe(0);
      expect(models.calls, name).toBe(0);
      expect(records(fy), name).toEqual(before);
    }
  });

  it("a first append refused by CAS or failing in storage: that error, head 0, the harness never runs, no model call, nothing observed (checklist §8.9 #54)", async () => {
    // A stale fence cannot refuse a first append here: every turn's first append mints its own fence
    // in the same transaction (TurnWriter.open), superseding any older writer.
    const attempt = async (log: TurnLog, expectedSeq?: bigint) => {
      const runs = { n: 0 };
      const models = scriptedModels(echoScript);
      const observed: AppendedRecord[] = [];
      const h = probe([], runs);
      const run = runLiveTurn(
        {
          sessionUid: uid,
          executionId: "0000000000000e54",
          harnessName: "h",
          harness: h,
          descriptor: await h.describe(),
          inputs: [userText("x")],
          config: new Uint8Array(),
          resumeFromSeq: 0n,
          expectedSeq,
          signal: new AbortController().signal,
        },
        { log, models, observe: (r) => void observed.push(...r) },
      );
      return { run, runs, models, observed };
    };

    const fx = newLog();
    const cas = await attempt(fx.log, 3n);
    expect(await cas.run).toMatchObject({ kind: "refused", refusal: { reason: "conflict", head: 0n, expected: 3n } });
    expect([cas.runs.n, cas.models.calls, cas.observed.length]).toEqual([0, 0, 0]);
    expect(fx.journal.head().seq).toBe(0n);

    // The storage itself fails inside the append's transaction (as a full disk would).
    fx.db.query("CREATE TRIGGER full BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    const io = await attempt(fx.log);
    await expect(io.run).rejects.toThrow(/database or disk is full/);
    expect([io.runs.n, io.models.calls, io.observed.length]).toEqual([0, 0, 0]);
    expect(fx.journal.head().seq).toBe(0n);
    expect(reopenLog(fx).journal.head().seq).toBe(0n);
  });
});
