/**
 * The session's in-memory journal (objects/session/session-cache.ts) against the journal itself:
 * kept up to date append by append, it must say exactly what a cache rebuilt from SQLite says, and
 * what parseExecutions says of the stored records: the same records, the same executions, the same
 * malformation (issue 12: "rebuild-from-journal and incremental must give identical results").
 * Randomized long journals mix turns, gates and their decisions, receipts, cancels, errors, forks'
 * markers, crashes (a turn cut short and recovered) and malformed records.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it, vi } from "vitest";
import { historyOf, latestExecution, parseExecutions } from "../../../objects/controller/execution-log.js";
import { heapEstimate, SessionCache } from "../../../objects/session/session-cache.js";
import { executionKey, ParseCheckpoints } from "../../../objects/session/parse-checkpoint.js";
import { EventKind, EventSchema, type Event, Lifecycle_Kind, Mediation } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { execReq, drain, createSession, inject, setup, stateOf } from "../support/session-fixture.js";
import { userText } from "../../../proto/messages.js";
import { rng } from "../support/random-messages.js";
import { boundHistory, compactionMarker, compactionOf } from "../../../runtimes/compaction.js";

const ev = (executionId: string, kind: EventKind, body: { case: string | undefined; value?: unknown } = { case: undefined }): Event =>
  create(EventSchema, { executionId, kind, body: body as never });

interface Open {
  id: string;
  /** A gate in progress: its call id, and the seqs of its request and decision once written. */
  gate?: { call: string; request?: bigint; decision?: bigint };
}

/** One random step of a journal: mostly well-formed turns and gates, rarely a record the API refuses. */
function randomStep(r: ReturnType<typeof rng>, n: number, open: Open | undefined, head: bigint): Event[] {
  const start = () => {
    const inputs = r.int(3);
    return [
      ev(`ex${n}`, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: BigInt(inputs), harness: "echo" } }),
      ...Array.from({ length: inputs }, () => ev(`ex${n}`, EventKind.EVENT_INPUT, { case: "message", value: userText("in") })),
    ];
  };
  if (r.chance(0.004)) {
    // Malformed: an effect naming no execution, a record of an unknown one, a late INPUT.
    const id = open?.id ?? "none";
    return [
      [ev("", EventKind.EVENT_OUTPUT), ev(`ghost${n}`, EventKind.EVENT_OUTPUT), ev(id, EventKind.EVENT_INPUT, { case: "message", value: userText("late") })][
        r.int(3)
      ]!,
    ];
  }
  if (!open) return r.chance(0.1) ? [ev("", EventKind.EVENT_LIFECYCLE, { case: "lifecycle", value: { kind: Lifecycle_Kind.LIFECYCLE_FORK } })] : start();
  const id = open.id;
  const g = open.gate;
  if (g) {
    // A gate continues in order (or its turn is canceled while parked).
    if (r.chance(0.1)) return [ev(id, EventKind.EVENT_END, { case: "end", value: { state: "CANCELED" } })];
    if (g.request === undefined) {
      g.request = head + 1n;
      return [ev(id, EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: g.call } })];
    }
    if (g.decision === undefined) {
      g.decision = head + 1n;
      return [
        ev(id, EventKind.EVENT_APPROVAL_RESULT, { case: "approvalResult", value: { toolCallId: g.call, approved: r.chance(0.7), requestSeq: g.request } }),
      ];
    }
    open.gate = undefined;
    return [ev(id, EventKind.EVENT_TOOL_RESULT, { case: "result", value: { id: g.call, approvalRequestSeq: g.request, approvalDecisionSeq: g.decision } })];
  }
  if (r.chance(0.03)) {
    // A compaction point: the summary, then its marker compacting through a random earlier seq.
    return [ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText("summary") }), compactionMarker(id, BigInt(r.int(Number(head))))];
  }
  switch (r.int(12)) {
    case 0:
      return [ev(id, EventKind.EVENT_MODEL_CALL, { case: "model", value: { model: "echo", id: `m${n}` } })];
    case 1:
    case 2:
      return [ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText("out") })];
    case 3:
    case 4:
      return [ev(id, EventKind.EVENT_END, { case: "end", value: { state: r.chance(0.8) ? "COMPLETED" : "FAILED" } })];
    case 5:
      return [ev(id, EventKind.EVENT_ERROR, { case: "error", value: { code: 13, description: "x" } })];
    case 6:
      open.gate = { call: `c${n}` };
      return [
        ev(id, EventKind.EVENT_TOOL_CALL, {
          case: "tool",
          value: { id: `c${n}`, tool: "pay", mediation: Mediation.REQUIRES_APPROVAL, idempotencyKey: `k${n}` },
        }),
      ];
    case 7:
      return [ev(id, EventKind.EVENT_USAGE, { case: "usage", value: { model: "m", inputTokens: 1n } })];
    case 8:
      return [
        ev("", EventKind.EVENT_LIFECYCLE, { case: "lifecycle", value: { kind: [Lifecycle_Kind.LIFECYCLE_SUSPEND, Lifecycle_Kind.LIFECYCLE_FORK][r.int(2)]! } }),
      ];
    case 9:
      // A crash: the turn is left open and a new one starts (a recovery would close it first).
      return start();
    default:
      return [
        ev(id, EventKind.EVENT_TOOL_CALL, {
          case: "tool",
          value: { id: `t${n}`, tool: "look", mediation: Mediation.CONTROLLER_MEDIATED, idempotencyKey: `k${n}` },
        }),
      ];
  }
}

/** A turn of one input and one output, injected; every fifth passes an approval gate first. */
function injectTurn(host: Parameters<typeof inject>[0], n: number): void {
  const id = `ex${n}`;
  const head = stateOf(host).journal.head().seq;
  const gated = n % 5 === 0;
  inject(host, [
    ev(id, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 1n, harness: "echo" } }),
    ev(id, EventKind.EVENT_INPUT, { case: "message", value: userText("in") }),
    ...(gated
      ? [
          ev(id, EventKind.EVENT_TOOL_CALL, {
            case: "tool",
            value: { id: `c${n}`, tool: "pay", mediation: Mediation.REQUIRES_APPROVAL, idempotencyKey: `k${n}` },
          }),
          ev(id, EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: `c${n}` } }),
          ev(id, EventKind.EVENT_APPROVAL_RESULT, { case: "approvalResult", value: { toolCallId: `c${n}`, approved: true, requestSeq: head + 4n } }),
          ev(id, EventKind.EVENT_TOOL_RESULT, { case: "result", value: { id: `c${n}`, approvalRequestSeq: head + 4n, approvalDecisionSeq: head + 5n } }),
        ]
      : []),
    ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText("out") }),
    ev(id, EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } }),
  ]);
}

/** Injects turn `n` (injectTurn) and hands its records to `cache` too, as a session hands its own cache what it appends. */
function injectTurnAlso(host: Parameters<typeof inject>[0], n: number, cache: SessionCache): void {
  const s = stateOf(host);
  const from = s.journal.head().seq + 1n;
  injectTurn(host, n);
  cache.appended(s.journal.read(from, 0n, 1_000_000).map((r) => ({ ...r, decoded: fromBinary(EventSchema, r.event) })));
}

/** Every record of the session's journal, decoded. */
function storedOf(s: ReturnType<typeof stateOf>): { seq: bigint; event: Event }[] {
  return s.journal.read(1n, 0n, 1_000_000).map((x) => ({ seq: x.seq, event: fromBinary(EventSchema, x.event) }));
}

/** The rows a spied Journal.read has returned so far. */
function rowsReadBy(read: { mock: { results: { value: unknown }[] } }): number {
  return read.mock.results.reduce((k, x) => k + (x.value as unknown[]).length, 0);
}

/**
 * A session past a budget of 0 whose own cache stores no checkpoint, so the caches a test makes
 * over its storage are the only ones that do (a session's own stores one every 256 records).
 */
async function sessionWithoutOwnCheckpoints() {
  const fx = setup({}, undefined, { cacheMaxHeapBytes: 0 });
  await createSession(fx.host);
  const s = stateOf(fx.host);
  (s as { cache: SessionCache }).cache = new SessionCache(() => s.journal, 0);
  return { fx, s };
}

/**
 * What an operation on the latest execution reads from `current` (a latest-only parse past the
 * budget) must be what the whole parse says: verdict, latest execution, fork seq, its history, and
 * every recorded decision.
 */
function expectSameForLatest(cache: SessionCache, stored: { seq: bigint; event: Event }[]): void {
  const whole = parseExecutions(stored);
  const current = cache.current();
  if (!whole.ok) {
    expect(current).toEqual(whole);
    return;
  }
  if (!current.ok) throw new Error(`latest-only parse is malformed where the whole one is not: ${current.detail}`);
  expect(current.latestOnly).toBeDefined();
  expect(current.lastForkSeq).toBe(whole.lastForkSeq);
  const latest = latestExecution(whole);
  expect(current.executions).toEqual(latest ? [latest] : []);
  if (latest) expect(historyOf(current, current.executions[0]!)).toEqual(historyOf(whole, latest));
  expect(cache.latestOpen()).toBe(latest !== undefined && latest.endState === undefined);
  for (const ex of whole.executions)
    for (const e of ex.effects)
      if (e.event.body.case === "approvalResult") expect(cache.decision(ex.id, e.event.body.value.toolCallId, e.event.body.value.requestSeq)).toEqual(e);
}

describe("the session's in-memory journal", () => {
  it("cache: appended record by record, it equals a cache rebuilt from SQLite and parseExecutions, on 40 random journals of up to 600 records", async () => {
    await randomJournals(undefined);
  });

  it("cache: past its memory budget, the latest-only parse it keeps append by append, and one rebuilt from SQLite, say what the whole parse says of the latest execution, on 40 random journals", async () => {
    await randomJournals(1);
  });

  async function randomJournals(budget: number | undefined): Promise<void> {
    let malformed = 0;
    let compacted = 0;
    let decided = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const r = rng(seed);
      const fx = setup({}, undefined, budget === undefined ? {} : { cacheMaxHeapBytes: budget });
      const uid = await createSession(fx.host);
      const s = stateOf(fx.host);
      // Loaded before the first append, so everything after is incremental.
      expect(s.loggedEvents()).toEqual([]);
      expect(s.parsedLog().ok).toBe(true);
      let open: Open | undefined;
      for (let n = 0; n < 150; n++) {
        const events = randomStep(r, n, open, s.journal.head().seq);
        inject(fx.host, events);
        const first = events[0]!;
        if (first.kind === EventKind.EVENT_EXECUTION_START) open = { id: first.executionId };
        else if (first.kind === EventKind.EVENT_END) open = undefined;
        if (n % 25 === 24 || n === 149) {
          const rebuilt = new SessionCache(() => s.journal);
          const stored = storedOf(s);
          decided += stored.filter((x) => x.event.kind === EventKind.EVENT_APPROVAL_RESULT).length;
          if (budget !== undefined) {
            // Kept append by append since the first record, and rebuilt from SQLite.
            expectSameForLatest(s.cache, stored);
            expectSameForLatest(new SessionCache(() => s.journal, budget), stored);
            // An object starting again over the same storage: from the checkpoint the last one stored.
            expectSameForLatest(
              new SessionCache(() => s.journal, budget, undefined, { store: new ParseCheckpoints(fx.db), after: seed % 2 ? 16n : undefined }),
              stored,
            );
            // Before anything builds that parse, latestOpen reads back from the head instead.
            if (s.parsedLog().ok) expect(new SessionCache(() => s.journal, budget).latestOpen()).toBe(s.cache.latestOpen());
            expect(s.cache.parsed()).toEqual(parseExecutions(stored));
            expect(s.loggedEvents()).toEqual(stored);
            continue;
          }
          expect(s.loggedEvents()).toEqual(rebuilt.events());
          expect(s.loggedEvents()).toEqual(stored);
          expect(s.parsedLog()).toEqual(rebuilt.parsed());
          expect(s.parsedLog()).toEqual(parseExecutions(stored));
          expect(s.cache.latestOpen()).toBe(rebuilt.latestOpen());
          expect(s.events(3n, 9n)).toEqual(stored.slice(2, 9));
          const events = stored.map((x) => x.event);
          for (const to of [1n, BigInt(stored.length >> 1), BigInt(stored.length - 1), BigInt(stored.length)]) {
            expect(s.cache.history(to)).toEqual(boundHistory(events, Number(to)));
            expect(rebuilt.history(to)).toEqual(boundHistory(events, Number(to)));
          }
          compacted += Number(compactionOf(s.cache.history(BigInt(stored.length))) !== undefined);
        }
      }
      if (!s.parsedLog().ok) malformed++;
      void uid;
    }
    // The journals must exercise both outcomes, and decisions.
    expect(malformed).toBeGreaterThan(2);
    expect(malformed).toBeLessThan(38);
    expect(decided).toBeGreaterThan(100);
    // And histories bounded at a compaction point as well as whole ones.
    if (budget !== undefined) return;
    expect(compacted).toBeGreaterThan(20);
    expect(compacted).toBeLessThan(220);
  }

  it("cache: turns, a crash (a new host over the same storage), a recovery and a cancel leave it equal to a rebuild", async () => {
    const fx = setup();
    const uid = await createSession(fx.host);
    for (let i = 0; i < 5; i++) await drain(fx.host.exec(execReq({ session: uid, inputs: [userText(`t${i}`)] })));
    const s = stateOf(fx.host);
    // An execution cut short: its start and input, and nothing more.
    inject(fx.host, [
      ev("cut", EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 1n, harness: "echo" } }),
      ev("cut", EventKind.EVENT_INPUT, { case: "message", value: userText("cut") }),
    ]);
    expect(s.cache.latestOpen()).toBe(true);
    await drain(fx.host.exec(execReq({ session: uid })));
    expect(s.cache.latestOpen()).toBe(false);
    await fx.host.resume();
    const rebuilt = new SessionCache(() => s.journal);
    expect(s.loggedEvents()).toEqual(rebuilt.events());
    expect(s.parsedLog()).toEqual(rebuilt.parsed());
    expect(s.loggedEvents().length).toBe(Number(s.journal.head().seq));
  });

  it("cache: a journal over its memory budget is not kept, and every read still answers from SQLite", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    const small = new SessionCache(() => s.journal, 200);
    for (let i = 0; i < 20; i++) inject(fx.host, [ev(`e${i}`, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 0n } })]);
    const stored = s.journal.read(1n, 0n, 1000).map((x) => ({ seq: x.seq, event: fromBinary(EventSchema, x.event) }));
    expect(small.events()).toEqual(stored);
    expect(small.parsed()).toEqual(parseExecutions(stored));
    expect(small.range(2n, 4n)).toEqual(stored.slice(1, 4));
  });

  it("cache: its budget counts what the decoded records take in memory, not their stored bytes", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    // 60 small records: a few kilobytes stored, some 50 KB once decoded (bench/memory.ts).
    for (let i = 0; i < 60; i++) inject(fx.host, [ev(`e${i}`, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 0n } })]);
    const rows = s.journal.read(1n, 0n, 1000);
    const storedBytes = rows.reduce((n, r) => n + r.event.length, 0);
    const stored = rows.map((x) => ({ seq: x.seq, event: fromBinary(EventSchema, x.event) }));
    const budget = 20_000;
    expect(storedBytes).toBeLessThan(budget / 4);
    // Kept: every read hands out the same array. Not kept: each read is SQLite's, a new array.
    const roomy = new SessionCache(() => s.journal, 200_000);
    expect(roomy.events()).toBe(roomy.events());
    const tight = new SessionCache(() => s.journal, budget);
    expect(tight.events()).not.toBe(tight.events());
    expect(tight.events()).toEqual(stored);
    expect(tight.parsed()).toEqual(parseExecutions(stored));
  });

  it("cache: appends that take it past its memory budget let the kept records go; reads then answer from SQLite", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    const start = (i: number) => ev(`e${i}`, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 0n } });
    const cache = new SessionCache(() => s.journal, 10 * heapEstimate(40, start(0)));
    inject(fx.host, [start(0), start(1)]);
    expect(cache.events()).toBe(cache.events());
    for (let i = 2; i < 30; i++) {
      const r = s.append([start(i)], { fence: 0n, mintFence: true });
      if (!r.ok) throw new Error(r.reason);
      cache.appended(r.records);
    }
    const stored = s.journal.read(1n, 0n, 1000).map((x) => ({ seq: x.seq, event: fromBinary(EventSchema, x.event) }));
    expect(cache.events()).not.toBe(cache.events());
    expect(cache.events()).toEqual(stored);
    expect(cache.range(5n, 7n)).toEqual(stored.slice(4, 7));
    expect(cache.parsed()).toEqual(parseExecutions(stored));
  });

  it("cache: a journal of more records than the budget has room for is found too large from its head, without reading it", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    const start = (i: number) => ev(`e${i}`, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 0n } });
    inject(
      fx.host,
      Array.from({ length: 40 }, (_, i) => start(i)),
    );
    const least = heapEstimate(0, start(0));
    const head = Number(s.journal.head().seq);
    const told: [number, number][] = [];
    // Room for one record fewer than the journal holds, at the least a record takes.
    const cache = new SessionCache(
      () => s.journal,
      (head - 1) * least,
      (records, heap) => told.push([records, heap]),
    );
    const read = vi.spyOn(s.journal, "read");
    const stored = s.journal.read(1n, 0n, 1000).map((x) => ({ seq: x.seq, event: fromBinary(EventSchema, x.event) }));
    read.mockClear();
    expect(cache.events()).toEqual(stored);
    // One page read for the answer; none to learn that the journal does not fit.
    expect(read).toHaveBeenCalledTimes(1);
    expect(told).toEqual([[head, head * least]]);
    expect(cache.parsed()).toEqual(parseExecutions(stored));
    // With room for what the records take (their bytes at most 100 each), it is read and kept.
    const roomy = new SessionCache(
      () => s.journal,
      head * (least + 200),
      () => told.push([0, 0]),
    );
    expect(roomy.events()).toBe(roomy.events());
    expect(told).toHaveLength(1);
    read.mockRestore();
  });

  it("cache: past the budget, an object starting again reads its parse's checkpoint, the latest execution and what came after, not the whole journal", async () => {
    const { fx, s } = await sessionWithoutOwnCheckpoints();
    const step = (n: number) => injectTurn(fx.host, n);
    for (let n = 0; n < 300; n++) step(n);
    const stored = () => storedOf(s);
    expect(parseExecutions(stored()).ok).toBe(true);
    const head = Number(s.journal.head().seq);
    const read = vi.spyOn(s.journal, "read");
    const rowsRead = () => rowsReadBy(read);
    let rows = 0;
    /** A new cache over the same storage, what it read to build its parse (in `rows`), and that parse checked. */
    /** Rows of earlier executions (or their decisions) looked up while the parse was made. */
    let lookups = 0;
    const sql = vi.spyOn(fx.db, "query");
    const wake = () => {
      const want = stored();
      read.mockClear();
      sql.mockClear();
      const cache = new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db), after: 64n });
      cache.current();
      rows = rowsRead();
      lookups = sql.mock.calls.filter(([q]) => q.startsWith("SELECT") && /FROM parse_(executions|decisions)/.test(q)).length;
      expectSameForLatest(cache, want);
    };
    const through = () => fx.db.query<{ through: number; hash: string }>("SELECT through, hash FROM parse_state")[0];

    // No checkpoint yet: the whole journal, and the checkpoint stored.
    wake();
    expect(rows).toBeGreaterThanOrEqual(head);
    expect(through()).toEqual({ through: head, hash: s.journal.head().hash });
    const earlier = fx.db.query("SELECT first FROM parse_executions").length;
    expect(earlier).toBeGreaterThan(100);
    const decisions = fx.db.query("SELECT seq FROM parse_decisions").length;
    expect(decisions).toBeGreaterThan(10);

    // Again: the checkpoint's record and the latest execution only.
    wake();
    const latest = latestExecution(parseExecutions(stored()) as never)!;
    expect(rows).toBeLessThanOrEqual(1 + Number(s.journal.head().seq - latest.firstSeq) + 1);
    // No row per earlier execution or decision: looked up only when a record after the checkpoint, or a retried decision, names one.
    expect(lookups).toBe(0);

    // Fewer records after it than `after`: read, not stored; more: a newer checkpoint, of what changed.
    for (let n = 300; n < 302; n++) step(n);
    wake();
    expect(through()!.through).toBe(head);
    for (let n = 302; n < 330; n++) step(n);
    wake();
    expect(through()).toEqual({ through: Number(s.journal.head().seq), hash: s.journal.head().hash });
    expect(fx.db.query("SELECT first FROM parse_executions").length).toBeGreaterThan(earlier);
    wake();
    expect(rows).toBeLessThan(head / 10);
    expect(lookups).toBe(0);

    // Rows that do not fit the journal are dropped and the parse is built from the journal again.
    for (const spoil of [
      "UPDATE parse_state SET hash = '00'",
      "UPDATE parse_state SET state = '{'",
      `UPDATE parse_state SET state = replace(state, '"id":"ex', '"id":"gone')`,
      "UPDATE parse_state SET through = 999999",
    ]) {
      fx.db.query(spoil);
      wake();
      expect(lookups).toBe(0);
      expect(rows).toBeGreaterThanOrEqual(Number(s.journal.head().seq));
      expect(through()).toEqual({ through: Number(s.journal.head().seq), hash: s.journal.head().hash });
      expect(fx.db.query("SELECT seq FROM parse_decisions").length).toBeGreaterThanOrEqual(decisions);
    }
    read.mockRestore();
    sql.mockRestore();
  });

  it("cache: within the budget, an object starting again decides Approve, Cancel and Resume from the checkpoint and the records since; the journal is loaded only for a history, and both stay up to date", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    // Kept in memory as a turn keeps it, so its appends store checkpoints.
    expect(s.loggedEvents()).toBe(s.loggedEvents());
    for (let n = 0; n < 200; n++) injectTurn(fx.host, n);
    const stored = () => storedOf(s);
    const head = Number(s.journal.head().seq);
    const through = fx.db.query<{ through: number }>("SELECT through FROM parse_state")[0]!.through;
    expect(head - through).toBeLessThan(256);
    expect(head).toBeGreaterThan(900);

    const read = vi.spyOn(s.journal, "read");
    const rowsRead = () => rowsReadBy(read);
    const woken = new SessionCache(() => s.journal, undefined, undefined, { store: new ParseCheckpoints(fx.db) });
    const want = stored();
    const latest = latestExecution(parseExecutions(want) as never)!;
    read.mockClear();
    const current = woken.current();
    expect(current.ok && current.latestOnly).toBeTruthy();
    expect(woken.latestOpen()).toBe(false);
    // The checkpoint's record, the latest execution and the records after the checkpoint.
    expect(rowsRead()).toBeLessThanOrEqual(1 + (head - through) + Number(BigInt(head) - latest.firstSeq) + 1);
    // A retried decision of an earlier execution: its one record, once.
    read.mockClear();
    expect(woken.decision("ex100", "c100", 0n)).toBeUndefined();
    const decided = want.find((e) => e.event.executionId === "ex100" && e.event.kind === EventKind.EVENT_APPROVAL_RESULT)!;
    expect(decided.seq).toBeLessThan(through);
    expect(woken.decision("ex100", "c100", decided.event.body.case === "approvalResult" ? decided.event.body.value.requestSeq : 0n)).toEqual(decided);
    expect(rowsRead()).toBe(1);
    read.mockRestore();
    // A history loads the journal; what it says is the whole parse's.
    expectSameForLatest(woken, want);
    expect(woken.events()).toEqual(want);
    expect(woken.parsed()).toEqual(parseExecutions(want));

    // Appends extend both the kept records and the restored parse, and store the next checkpoint.
    for (let n = 200; n < 260; n++) {
      injectTurnAlso(fx.host, n, woken);
    }
    const after = stored();
    expect(woken.events()).toEqual(after);
    expect(woken.current()).toEqual(parseExecutions(after));
    expectSameForLatest(new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db) }), after);
    expect(fx.db.query<{ through: number }>("SELECT through FROM parse_state")[0]!.through).toBeGreaterThan(head);

    // Loaded first (a turn's history): the parse learns what the stored checkpoint holds, so its
    // checkpoints write what came since, not every execution again.
    const store = new ParseCheckpoints(fx.db);
    const write = vi.spyOn(store, "write");
    const loadedFirst = new SessionCache(() => s.journal, undefined, undefined, { store });
    const storedAtLoad = BigInt(fx.db.query<{ through: number }>("SELECT through FROM parse_state")[0]!.through);
    expect(loadedFirst.events()).toEqual(after);
    for (let n = 260; n < 320; n++) {
      injectTurnAlso(fx.host, n, loadedFirst);
    }
    expect(write).toHaveBeenCalled();
    const rows = write.mock.calls.reduce((k, [cp]) => k + cp.earlier.length, 0);
    // A turn takes at least 4 records: the executions since the stored checkpoint, and the 60 appended.
    expect(rows).toBeLessThanOrEqual(Number(BigInt(after.length) - storedAtLoad) / 4 + 60 + 1);
    expectSameForLatest(new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db) }), stored());
  });

  it("cache: restored, then loaded for a history, then outgrowing the budget: the restored parse goes on, stores the checkpoint at that append, and says what the whole parse says", async () => {
    const fx = setup({}, undefined, { cacheMaxHeapBytes: 300_000 });
    await createSession(fx.host);
    const s = stateOf(fx.host);
    for (let n = 0; n < 60; n++) injectTurn(fx.host, n);
    const through = () => fx.db.query<{ through: number }>("SELECT through FROM parse_state")[0]!.through;
    expect(through()).toBeGreaterThan(0);
    const woken = new SessionCache(() => s.journal, 300_000, undefined, { store: new ParseCheckpoints(fx.db) });
    expect(woken.current()).toMatchObject({ ok: true, latestOnly: {} });
    const kept = () => {
      const a = woken.events();
      return a === woken.events();
    };
    expect(kept()).toBe(true);
    let n = 60;
    for (; kept(); n++) {
      if (n > 1000) throw new Error("the journal never outgrew the budget");
      injectTurnAlso(fx.host, n, woken);
    }
    expect(through()).toBe(Number(s.journal.head().seq));
    const stored = storedOf(s);
    expectSameForLatest(woken, stored);
    expectSameForLatest(new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db) }), stored);
  });

  it("cache: a session whose turns never need the parse still keeps its checkpoint current from its first append; a long journal stored without one waits for the operation that builds it", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    const through = () =>
      fx.db.query("SELECT name FROM sqlite_master WHERE name = 'parse_state'").length
        ? (fx.db.query<{ through: number }>("SELECT through FROM parse_state")[0]?.through ?? 0)
        : 0;
    for (let n = 0; n < 300; n++) {
      injectTurn(fx.host, n);
      expect(Number(s.journal.head().seq) - through()).toBeLessThan(256);
    }
    expect(through()).toBeGreaterThan(1000);
    // Nothing was loaded to keep it: an echo turn does not load the journal.
    const stored = storedOf(s);
    expectSameForLatest(new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db) }), stored);

    // An object starting again: a turn that appends less than 256 records past the checkpoint reads
    // only that checkpoint's record; the one that reaches 256 makes the parse and stores a newer one.
    s.cache.reset();
    const before = through();
    const reads = vi.spyOn(s.journal, "read");
    const readRows = () => rowsReadBy(reads);
    injectTurn(fx.host, 300);
    expect(readRows()).toBe(1);
    let n = 301;
    for (; through() === before; n++) injectTurn(fx.host, n);
    expect(through()).toBe(Number(s.journal.head().seq));
    expect(through() - before).toBeGreaterThanOrEqual(256);
    reads.mockRestore();

    // The rows gone (an older build stored none): appends do not read the whole journal to make them.
    new ParseCheckpoints(fx.db).clear();
    s.cache.reset();
    const read = vi.spyOn(s.journal, "read");
    for (const end = n + 60; n < end; n++) injectTurn(fx.host, n);
    const rows = rowsReadBy(read);
    read.mockRestore();
    expect(rows).toBeLessThan(100);
    expect(through()).toBe(0);
    // The first operation that needs the parse builds it, and stores it.
    expect(s.cache.current().ok).toBe(true);
    expect(through()).toBe(Number(s.journal.head().seq));
  });

  it("cache: a restore that read 256 records or more (the checkpoint's latest execution was long) stores a newer checkpoint, so the next object life does not read them again", async () => {
    const { fx, s } = await sessionWithoutOwnCheckpoints();
    inject(fx.host, [
      ev("big", EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 300n, harness: "echo" } }),
      ...Array.from({ length: 300 }, () => ev("big", EventKind.EVENT_INPUT, { case: "message", value: userText("in") })),
      ev("big", EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } }),
    ]);
    const wake = () => {
      const read = vi.spyOn(s.journal, "read");
      const cache = new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db) });
      expect(cache.current().ok).toBe(true);
      const rows = rowsReadBy(read);
      read.mockRestore();
      return rows;
    };
    expect(wake()).toBe(302);
    const through = () => fx.db.query<{ through: number }>("SELECT through FROM parse_state")[0]!.through;
    expect(through()).toBe(302);
    injectTurn(fx.host, 1);
    // The checkpoint's record (its hash), "big" whole and the turn's 4 records since: then stored at the head.
    expect(wake()).toBe(1 + 302 + 4);
    expect(through()).toBe(306);
    expect(wake()).toBe(1 + 4);
  });

  it("cache: a session whose checkpoint write fails says so once in a warn line (no contents) and goes on", async () => {
    const fx = setup();
    const uid = await createSession(fx.host);
    const query = fx.db.query.bind(fx.db);
    vi.spyOn(fx.db, "query").mockImplementation((sql: string, ...params: Parameters<typeof query>[1][]) => {
      if (sql.startsWith("INSERT OR REPLACE INTO parse_executions")) throw new Error("SQLITE_FULL: database or disk is full");
      return query(sql, ...params);
    });
    for (let n = 0; n < 120; n++) injectTurn(fx.host, n);
    const lines = fx.logs.filter((l) => l.msg === "parse checkpoint not stored");
    expect(lines).toEqual([
      {
        level: "warn",
        msg: "parse checkpoint not stored",
        component: "session",
        session: uid,
        through: expect.any(Number),
        error: "SQLITE_FULL: database or disk is full",
      },
    ]);
    expect(lines[0]!.through).toBeGreaterThanOrEqual(256);
    // Nothing was stored, and the session's parse still answers.
    expect(fx.db.query("SELECT name FROM sqlite_master WHERE name = 'parse_state'")).toEqual([]);
    expect(stateOf(fx.host).parsedLog().ok).toBe(true);
    vi.restoreAllMocks();
  });

  it("cache: rows stored by the build that keyed executions by their id text are dropped and stored again keyed; keys are exact integers", async () => {
    const { fx, s } = await sessionWithoutOwnCheckpoints();
    for (let n = 0; n < 30; n++) injectTurn(fx.host, n);
    const head = s.journal.head();
    fx.db.query("CREATE TABLE parse_state (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL, hash TEXT NOT NULL, state TEXT NOT NULL)");
    fx.db.query("CREATE TABLE parse_earlier (execution TEXT PRIMARY KEY, packed INTEGER NOT NULL)");
    fx.db.query("CREATE TABLE parse_decisions (execution TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (execution, seq))");
    fx.db.query("INSERT INTO parse_state VALUES (1, ?, ?, ?)", Number(head.seq), head.hash, JSON.stringify({ index: 0, lastForkSeq: "0", gates: [] }));
    const tables = () =>
      fx.db.query<{ name: string }>("SELECT name FROM sqlite_master WHERE name LIKE 'parse_%' AND type = 'table' ORDER BY name").map((r) => r.name);
    expect(new ParseCheckpoints(fx.db).read()).toBeUndefined();
    expect(tables()).toEqual(["parse_decisions", "parse_state"]);
    const stored = storedOf(s);
    expectSameForLatest(new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db), after: 16n }), stored);
    expect(tables()).toEqual(["parse_decisions", "parse_executions", "parse_state"]);
    expect(fx.db.query("SELECT first FROM parse_executions").length).toBe(29);
    expectSameForLatest(new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db) }), stored);
    const keys = new Set(
      ["", "a", "b", "ex1", "ex10", "1ex0", ...Array.from({ length: 2000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`)].map(
        executionKey,
      ),
    );
    expect(keys.size).toBe(2006);
    for (const k of keys) expect(Number.isSafeInteger(k) && k >= 0).toBe(true);
  });

  it("cache: a checkpoint whose write failed stops this life's writes, so the stored rows stay whole at their own seq; a storage fault on a row lookup is thrown, not taken for a missing row", async () => {
    const fx = setup({}, undefined, { cacheMaxHeapBytes: 0 });
    await createSession(fx.host);
    const s = stateOf(fx.host);
    const store = new ParseCheckpoints(fx.db);
    const cache = new SessionCache(() => s.journal, 0, undefined, { store, after: 16n });
    (s as { cache: SessionCache }).cache = cache;
    const write = vi.spyOn(store, "write");
    for (let n = 0; n < 20; n++) injectTurn(fx.host, n);
    const writes = write.mock.calls.length;
    expect(writes).toBeGreaterThan(3);
    write.mockImplementationOnce(() => {
      throw new Error("SQLITE_IOERR: disk I/O error");
    });
    for (let n = 20; n < 80; n++) injectTurn(fx.host, n);
    expect(write.mock.calls.length).toBe(writes + 1);
    write.mockRestore();
    const stored = storedOf(s);
    expectSameForLatest(cache, stored);
    expectSameForLatest(new SessionCache(() => s.journal, 0, undefined, { store: new ParseCheckpoints(fx.db), after: 1_000_000n }), stored);

    const idAt = (seq: bigint) => stored[Number(seq) - 1]?.event.executionId;
    const query = fx.db.query.bind(fx.db);
    const faulty = vi.spyOn(fx.db, "query").mockImplementation((sql: string, ...params: Parameters<typeof query>[1][]) => {
      if (sql.includes("FROM parse_executions")) throw new Error("SQLITE_IOERR: disk I/O error");
      return query(sql, ...params);
    });
    expect(() => store.earlier("ex3", idAt)).toThrow(/SQLITE_IOERR/);
    faulty.mockRestore();
    const start = stored.find((e) => e.event.executionId === "ex3")!;
    // Its first seq, closed and ended (execution-log.ts EARLIER_*).
    expect(store.earlier("ex3", idAt)).toBe(Number(start.seq) * 4 + 3);
    // A row is the id's only if the journal's record at its first seq is of that execution (two ids can share a key).
    expect(store.earlier("ex3", () => "ex4")).toBeUndefined();
    fx.db.query(
      "INSERT INTO parse_executions (key, first, flags) VALUES (?, ?, 3)",
      executionKey("ex3"),
      Number(stored.find((e) => e.event.executionId === "ex4")!.seq),
    );
    expect(store.earlier("ex3", idAt)).toBe(Number(start.seq) * 4 + 3);
    fx.db.query("DELETE FROM parse_executions WHERE key = ? AND first = ?", executionKey("ex3"), Number(start.seq));
    expect(store.earlier("ex3", idAt)).toBeUndefined();
    fx.db.query("DROP TABLE parse_executions");
    expect(store.earlier("ex3", idAt)).toBeUndefined();
  });

  it("cache: past the budget, a turn learns whether the latest execution is open from the records back to its start, not a page of 512", async () => {
    const fx = setup({}, undefined, { cacheMaxHeapBytes: 0 });
    await createSession(fx.host);
    const s = stateOf(fx.host);
    for (let n = 1; n <= 120; n++) injectTurn(fx.host, n);
    // The latest turn (every fifth passes a gate) took 8 records; one more is left open.
    inject(fx.host, [ev("open", EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 0n } })]);
    const read = vi.spyOn(s.journal, "read");
    const cache = new SessionCache(() => s.journal, 0);
    expect(cache.latestOpen()).toBe(true);
    const rows = rowsReadBy(read);
    expect(rows).toBeLessThanOrEqual(16);
    injectTurn(fx.host, 121);
    read.mockClear();
    expect(new SessionCache(() => s.journal, 0).latestOpen()).toBe(false);
    read.mockRestore();
  });

  it("cache: a journal kept in memory stores its parse's checkpoint every 256 records and at the append that outgrows the budget, so no later object life reads the whole journal", async () => {
    const fx = setup({}, undefined, { cacheMaxHeapBytes: 300_000 });
    await createSession(fx.host);
    const s = stateOf(fx.host);
    expect(s.loggedEvents()).toBe(s.loggedEvents());
    // The tables come with the first checkpoint.
    const stored = () =>
      fx.db.query("SELECT name FROM sqlite_master WHERE name = 'parse_state'").length
        ? fx.db.query<{ through: number }>("SELECT through FROM parse_state")
        : [];
    injectTurn(fx.host, 0);
    expect(stored()).toEqual([]);
    let n = 1;
    const throughs = new Set<number>();
    /** Whether the records are still kept: the same array each time, not a read from SQLite. */
    const kept = () => {
      const a = s.loggedEvents();
      return a === s.loggedEvents();
    };
    for (; kept(); n++) {
      if (n > 1000) throw new Error("the journal never outgrew the budget");
      injectTurn(fx.host, n);
      const at = stored()[0]?.through;
      if (at !== undefined && !throughs.has(at)) {
        expect(at).toBe(Number(s.journal.head().seq));
        // While kept: at the append that took it 256 records past the one before.
        if (kept()) {
          expect(at - Math.max(0, ...throughs)).toBeGreaterThanOrEqual(256);
          expect(at - Math.max(0, ...throughs)).toBeLessThan(256 + 8);
        }
        throughs.add(at);
      }
    }
    expect(throughs.size).toBeGreaterThanOrEqual(2);
    // And at the append that took it past the budget, which let the records go.
    expect(stored()).toEqual([{ through: Number(s.journal.head().seq) }]);
    expect(fx.db.query("SELECT first FROM parse_executions").length).toBe(n - 1);
    for (const end = n + 10; n < end; n++) injectTurn(fx.host, n);
    const want = storedOf(s);
    const read = vi.spyOn(s.journal, "read");
    const woken = new SessionCache(() => s.journal, 300_000, undefined, { store: new ParseCheckpoints(fx.db) });
    woken.current();
    const rows = rowsReadBy(read);
    read.mockRestore();
    expect(rows).toBeLessThan(150);
    expectSameForLatest(woken, want);
  });

  it("cache: a session whose journal outgrows the budget says so once in a warn line (counts only), and its turns go on from SQLite", async () => {
    const fx = setup({}, undefined, { cacheMaxHeapBytes: 20_000 });
    const uid = await createSession(fx.host);
    const s = stateOf(fx.host);
    const outputs: string[] = [];
    for (let i = 0; i < 12; i++) {
      // Something reads the journal after the first turn (an echo turn alone never loads it).
      if (i === 1) expect(s.loggedEvents()).toBe(s.loggedEvents());
      const { updates, failure } = await drain(fx.host.exec(execReq({ session: uid, inputs: [userText(`secret ${i}`)] })));
      expect(failure).toBeUndefined();
      for (const u of updates)
        if (u.update.case === "record" && u.update.value.event!.kind === EventKind.EVENT_OUTPUT && u.update.value.event!.body.case === "message")
          outputs.push(u.update.value.event!.body.value.parts.map((p) => (p.part.case === "text" ? p.part.value.text : "")).join(""));
    }
    expect(outputs).toEqual(Array.from({ length: 12 }, (_, i) => `echo:secret ${i}`));
    const lines = fx.logs.filter((l) => l.msg === "journal cache over budget");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "warn", component: "session", session: uid, budget_bytes: 20_000 });
    expect(lines[0]!.records).toBeGreaterThan(0);
    expect(lines[0]!.estimated_bytes).toBeGreaterThan(20_000);
    expect(JSON.stringify(lines)).not.toContain("secret");
    expect(s.loggedEvents()).not.toBe(s.loggedEvents());
    expect(fx.logs.filter((l) => l.msg === "journal cache over budget")).toHaveLength(1);
  });

  it("cache: a budget of 0 keeps nothing and writes no line: every read answers from SQLite", async () => {
    const fx = setup({}, undefined, { cacheMaxHeapBytes: 0 });
    const uid = await createSession(fx.host);
    const s = stateOf(fx.host);
    for (let i = 0; i < 3; i++) expect((await drain(fx.host.exec(execReq({ session: uid, inputs: [userText(`t${i}`)] })))).failure).toBeUndefined();
    const stored = s.journal.read(1n, 0n, 1000).map((x) => ({ seq: x.seq, event: fromBinary(EventSchema, x.event) }));
    expect(s.loggedEvents()).not.toBe(s.loggedEvents());
    expect(s.loggedEvents()).toEqual(stored);
    expect(fx.logs.filter((l) => l.msg === "journal cache over budget")).toEqual([]);
  });

  it("cache: a record carrying JSON (tool arguments and results, data parts) counts at several times its stored bytes, text at about its size", () => {
    const text = ev("e", EventKind.EVENT_OUTPUT, { case: "message", value: userText("x".repeat(1000)) });
    const tool = ev("e", EventKind.EVENT_TOOL_CALL, { case: "tool", value: { id: "t", tool: "look", args: { a: 1 } } });
    const result = ev("e", EventKind.EVENT_TOOL_RESULT, { case: "result", value: { id: "t", output: { a: 1 } } });
    const data = ev("e", EventKind.EVENT_INPUT, { case: "message", value: { role: "user", parts: [{ part: { case: "data", value: { data: { a: 1 } } } }] } });
    // What bench/memory.ts measured: about 700 bytes a record besides its bytes; JSON 1-5x its stored bytes.
    expect(heapEstimate(1000, text)).toBeGreaterThanOrEqual(1000 + 700);
    for (const e of [tool, result, data]) expect(heapEstimate(1000, e)).toBeGreaterThanOrEqual(5 * 1000 + 700);
    expect(heapEstimate(1000, text)).toBeLessThan(heapEstimate(1000, tool));
  });

  it("cache: a turn's history grows the last one handed out in place; an earlier point gets a copy and leaves it be", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    const turn = (id: string) => [
      ev(id, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 1n } }),
      ev(id, EventKind.EVENT_INPUT, { case: "message", value: userText(`in ${id}`) }),
      ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText(`out ${id}`) }),
      ev(id, EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } }),
    ];
    const stored = () => s.journal.read(1n, 0n, 10_000).map((x) => fromBinary(EventSchema, x.event));
    inject(fx.host, turn("a"));
    const first = s.cache.history(s.journal.head().seq);
    expect(first).toEqual(stored());
    inject(fx.host, turn("b"));
    const second = s.cache.history(s.journal.head().seq);
    expect(second).toBe(first);
    expect(second).toEqual(stored());
    const early = s.cache.history(2n);
    expect(early).not.toBe(second);
    expect(early).toEqual(stored().slice(0, 2));
    expect(second).toEqual(stored());
    // The next turn's history after that earlier point grows from it, and is whole.
    inject(fx.host, turn("c"));
    expect(s.cache.history(s.journal.head().seq)).toEqual(stored());
  });

  it("cache: over its memory budget, history and latestOpen read back only as far as they need and say what the kept cache says", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    // Turns of five records; every seventh compacts everything before it (summary OUTPUT, then its marker).
    let head = 0n;
    for (let i = 0; i < 260; i++) {
      const id = `e${i}`;
      const start = head + 1n;
      const events = [
        ev(id, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 1n } }),
        ev(id, EventKind.EVENT_INPUT, { case: "message", value: userText(`in ${i}`) }),
      ];
      if (i % 7 === 6) events.push(ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText(`summary ${i}`) }), compactionMarker(id, start - 1n));
      events.push(ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText(`out ${i}`) }));
      if (i < 259) events.push(ev(id, EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } }));
      inject(fx.host, events);
      head += BigInt(events.length);
    }
    const kept = new SessionCache(() => s.journal);
    const small = new SessionCache(() => s.journal, 200);
    for (const to of [1n, 7n, 33n, 40n, 41n, 42n, 511n, 512n, 513n, 700n, 1024n, head - 1n, head]) expect(small.history(to)).toEqual(kept.history(to));
    expect(compactionOf(small.history(head))).toBeDefined();
    expect(small.latestOpen()).toBe(true);
    expect(kept.latestOpen()).toBe(true);
    inject(fx.host, [ev("e259", EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } })]);
    expect(new SessionCache(() => s.journal, 200).latestOpen()).toBe(false);
  });
  it("cache: over its memory budget, latestOpen read back once follows the appends after it: a START opens, its END closes, another execution's END does not", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    const start = (id: string) => ev(id, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 0n } });
    const end = (id: string) => ev(id, EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } });
    for (let i = 0; i < 40; i++) inject(fx.host, [start(`e${i}`), end(`e${i}`)]);
    const tight = new SessionCache(() => s.journal, 200);
    expect(tight.latestOpen()).toBe(false);
    const steps: [Event, boolean][] = [
      [start("a"), true],
      [end("e3"), true],
      [end("a"), false],
      [start("b"), true],
      [start("c"), true],
      [end("b"), true],
      [end("c"), false],
    ];
    for (const [event, open] of steps) {
      const r = s.append([event], { fence: 0n, mintFence: true });
      if (!r.ok) throw new Error(r.reason);
      tight.appended(r.records);
      expect(tight.latestOpen()).toBe(open);
      expect(new SessionCache(() => s.journal, 200).latestOpen()).toBe(open);
    }
  });

  it("cache: over its memory budget, a compacting turn split across two pages of the read back is still bounded at its summary", async () => {
    const fx = setup();
    await createSession(fx.host);
    const s = stateOf(fx.host);
    // Ten plain turns, one that compacts them, then 600 records of plain turns: the read back
    // from the head reaches the marker only in its second page, and the page boundary is swept
    // over the compacting turn's start, input, summary and marker.
    const turn = (id: string, compactThrough?: bigint) => [
      ev(id, EventKind.EVENT_EXECUTION_START, { case: "executionStart", value: { inputCount: 1n } }),
      ev(id, EventKind.EVENT_INPUT, { case: "message", value: userText(`in ${id}`) }),
      ...(compactThrough === undefined
        ? []
        : [ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText(`summary ${id}`) }), compactionMarker(id, compactThrough)]),
      ev(id, EventKind.EVENT_OUTPUT, { case: "message", value: userText(`out ${id}`) }),
      ev(id, EventKind.EVENT_END, { case: "end", value: { state: "COMPLETED" } }),
    ];
    for (let i = 0; i < 10; i++) inject(fx.host, turn(`a${i}`));
    const start = s.journal.head().seq + 1n;
    inject(fx.host, turn("compacting", start - 1n));
    for (let i = 0; i < 150; i++) inject(fx.host, turn(`b${i}`));
    const stored = s.journal.read(1n, 0n, 10_000).map((x) => fromBinary(EventSchema, x.event));
    const kept = new SessionCache(() => s.journal);
    const small = new SessionCache(() => s.journal, 200);
    // The first page read is [to - 511, to]: its first record runs from the turn's start to past its marker.
    for (let first = start - 1n; first <= start + 4n; first++) {
      const to = first + 511n;
      const want = boundHistory(stored, Number(to));
      expect(compactionOf(want)).toBeDefined();
      expect(small.history(to)).toEqual(want);
      expect(kept.history(to)).toEqual(want);
    }
  });
});
