/**
 * Grouping a journal into executions and input completeness (docs/behaviour.md §2.4, §2.6).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, Mediation, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { userText } from "../../../proto/messages.js";
import {
  checkInputs,
  ExecutionLog,
  latestExecution,
  type LogCheckpoint,
  parseExecutions,
  type LoggedEvent,
} from "../../../objects/controller/execution-log.js";
import { compactionMarker } from "../../../runtimes/compaction.js";
import { rng, type Rng } from "../support/random-messages.js";

type Body = MessageInitShape<typeof EventSchema>["body"];

function log(...events: Event[]): LoggedEvent[] {
  return events.map((event, i) => ({ seq: BigInt(i + 1), event }));
}
const start = (id: string, inputCount?: bigint) =>
  create(EventSchema, { executionId: id, kind: EventKind.EVENT_EXECUTION_START, body: { case: "executionStart", value: { inputCount } } });
const input = (id: string, text = "x") =>
  create(EventSchema, { executionId: id, kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText(text) } });
const output = (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: userText("o") } });
const end = (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } });
const error = (id: string) =>
  create(EventSchema, { executionId: id, kind: EventKind.EVENT_ERROR, body: { case: "error", value: { code: 13, description: "x" } } });
const lifecycle = () => create(EventSchema, { kind: EventKind.EVENT_LIFECYCLE, body: { case: "lifecycle", value: { kind: 1 } } });

describe("parseExecutions", () => {
  it("parse: groups records by execution id in first-seen order and skips lifecycle records", () => {
    const p = parseExecutions(log(start("a", 1n), input("a"), output("a"), end("a"), lifecycle(), start("b", 0n), error("b")));
    expect(p.ok).toBe(true);
    if (!p.ok) return;
    expect(p.executions.map((e) => [e.id, e.endState, e.inputs.length, e.effects.length, e.errors.length])).toEqual([
      ["a", "COMPLETED", 1, 1, 0],
      ["b", undefined, 0, 0, 1],
    ]);
    expect(p.executions[1]!.firstIndex).toBe(5);
  });

  it("parse: a non-lifecycle record without an execution id is invalid", () => {
    const p = parseExecutions(log(start("a", 1n), input("a"), create(EventSchema, { kind: EventKind.EVENT_OUTPUT })));
    expect(p).toMatchObject({ ok: false, seq: 3n });
  });

  it("parse: an execution that does not begin with EXECUTION_START, or has two, is invalid", () => {
    expect(parseExecutions(log(input("a")))).toMatchObject({ ok: false, seq: 1n });
    expect(parseExecutions(log(start("a", 0n), start("a", 0n)))).toMatchObject({ ok: false, seq: 2n });
    const bodyless = create(EventSchema, { executionId: "a", kind: EventKind.EVENT_EXECUTION_START });
    expect(parseExecutions(log(bodyless))).toMatchObject({ ok: false, seq: 1n });
  });

  it("parse: an INPUT after the execution's effects, or an effect after its END, is invalid", () => {
    expect(parseExecutions(log(start("a", 1n), output("a"), input("a")))).toMatchObject({ ok: false, seq: 3n });
    expect(parseExecutions(log(start("a", 0n), end("a"), output("a")))).toMatchObject({ ok: false, seq: 3n });
  });

  it("parse: a gate's call, request, decision and receipt come in order; anything else past an open gate is invalid (checklist §8.14 #94, #115)", () => {
    const ev = (kind: EventKind, body: Body, id = "a") => create(EventSchema, { executionId: id, kind, body });
    const call = ev(EventKind.EVENT_TOOL_CALL, { case: "tool", value: { id: "g", idempotencyKey: "k", mediation: Mediation.REQUIRES_APPROVAL } });
    const request = ev(EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: "g" } });
    const decision = ev(EventKind.EVENT_APPROVAL_RESULT, { case: "approvalResult", value: { toolCallId: "g", approved: true, requestSeq: 3n } });
    const receipt = ev(EventKind.EVENT_TOOL_RESULT, { case: "result", value: { id: "g", approvalRequestSeq: 3n, approvalDecisionSeq: 4n } });
    // Legitimate: a whole gate then more effects; a gate cut at any step; END (Cancel) or ERROR past an open gate.
    expect(parseExecutions(log(start("a", 0n), call, request, decision, receipt, output("a"), end("a"))).ok).toBe(true);
    for (const cut of [[call], [call, request], [call, request, decision]]) expect(parseExecutions(log(start("a", 0n), ...cut)).ok).toBe(true);
    expect(parseExecutions(log(start("a", 0n), call, request, error("a"), lifecycle(), end("a"))).ok).toBe(true);
    // Another execution's records do not touch this one's gate.
    expect(parseExecutions(log(start("a", 0n), call, request, start("b", 0n), output("b"), end("b"))).ok).toBe(true);
    // A continuation past an open gate, at each step, and gate records out of place.
    expect(parseExecutions(log(start("a", 0n), call, output("a")))).toMatchObject({ ok: false, seq: 3n });
    expect(parseExecutions(log(start("a", 0n), call, request, output("a")))).toMatchObject({ ok: false, seq: 4n });
    expect(parseExecutions(log(start("a", 0n), call, request, decision, output("a")))).toMatchObject({ ok: false, seq: 5n });
    expect(parseExecutions(log(start("a", 0n), call, receipt))).toMatchObject({ ok: false, seq: 3n });
    expect(parseExecutions(log(start("a", 0n), request))).toMatchObject({ ok: false, seq: 2n });
    expect(parseExecutions(log(start("a", 0n), receipt))).toMatchObject({ ok: false, seq: 2n });
  });
});

describe("a latest-only ExecutionLog (what a session keeps past its memory budget)", () => {
  const ev = (kind: EventKind, body: Body, id: string) => create(EventSchema, { executionId: id, kind, body });
  const gate = (id: string, at: bigint) => [
    ev(EventKind.EVENT_TOOL_CALL, { case: "tool", value: { id: `g${id}`, idempotencyKey: "k", mediation: Mediation.REQUIRES_APPROVAL } }, id),
    ev(EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: `g${id}` } }, id),
    ev(EventKind.EVENT_APPROVAL_RESULT, { case: "approvalResult", value: { toolCallId: `g${id}`, approved: true, requestSeq: at + 2n } }, id),
  ];
  const latestOnly = (records: LoggedEvent[]) => {
    const l = new ExecutionLog(true);
    for (const r of records) l.push(r.seq, r.event);
    return l;
  };
  const verdict = (p: ReturnType<typeof parseExecutions>) => (p.ok ? { ok: true } : p);

  it("parse: it finds every malformation the whole parse finds, at the same record, including in executions it no longer keeps whole", () => {
    const journals = [
      // An earlier execution's late INPUT after its effects, with and without its END in between.
      log(start("a", 1n), input("a"), output("a"), start("b", 0n), input("a")),
      log(start("a", 0n), output("a"), end("a"), start("b", 0n), output("b"), input("a")),
      // An earlier execution's effect after its END, its second END, its second start.
      log(start("a", 0n), end("a"), start("b", 0n), output("a")),
      log(start("a", 0n), end("a"), start("b", 0n), end("a")),
      log(start("a", 0n), start("b", 0n), start("a", 0n)),
      // An earlier execution's gate continued out of order after a later one started.
      log(start("a", 0n), ...gate("a", 1n).slice(0, 2), start("b", 0n), output("a")),
      // An earlier execution's INPUT after its ERROR.
      log(start("a", 0n), error("a"), start("b", 0n), input("a")),
      // Legitimate: an earlier execution left open, given its INPUT before any effect, closed later.
      log(start("a", 1n), start("b", 0n), input("a"), output("b"), end("a"), end("b")),
    ];
    let bad = 0;
    for (const j of journals) {
      const whole = parseExecutions(j);
      bad += Number(!whole.ok);
      expect(verdict(latestOnly(j).latestView(() => []) as never)).toEqual(verdict(whole));
    }
    expect(bad).toBe(7);
  });

  /**
   * A journal whose executions interleave: each step continues one of the executions begun so far
   * (mostly the way a host would, through gates and compaction points), begins another, or, now
   * and then, writes what no host writes (a second start or END, an INPUT after effects, a step out
   * of a gate's order, an unknown execution).
   */
  function interleaved(r: Rng, steps: number): LoggedEvent[] {
    const events: Event[] = [];
    const ids: string[] = [];
    const gates = new Map<string, { call: string; next: EventKind; request?: bigint; decision?: bigint }>();
    /** Per execution: its first seq, whether it has effects (no more INPUT), whether it ended. */
    const state = new Map<string, { first: bigint; effects: boolean; ended: boolean }>();
    const wrong = () => r.chance(0.02);
    for (let n = 0; n < steps; n++) {
      const head = BigInt(events.length);
      const live = ids.filter((i) => !state.get(i)!.ended);
      if (live.length === 0 || r.chance(0.12)) {
        const id = `x${n}`;
        ids.push(id);
        state.set(id, { first: head + 1n, effects: false, ended: false });
        events.push(start(id, BigInt(r.int(2))));
        continue;
      }
      const id = wrong() ? r.pick(ids) : r.chance(0.6) ? live[live.length - 1]! : r.pick(live);
      const st = state.get(id)!;
      const g = gates.get(id);
      if (g && !wrong()) {
        if (r.chance(0.1)) {
          st.ended = true;
          events.push(end(id));
          continue;
        }
        if (g.next === EventKind.EVENT_APPROVAL_REQUEST) {
          g.request = head + 1n;
          g.next = EventKind.EVENT_APPROVAL_RESULT;
          events.push(ev(EventKind.EVENT_APPROVAL_REQUEST, { case: "approval", value: { toolCallId: g.call } }, id));
        } else if (g.next === EventKind.EVENT_APPROVAL_RESULT) {
          g.decision = head + 1n;
          g.next = EventKind.EVENT_TOOL_RESULT;
          const value = { toolCallId: g.call, approved: r.chance(0.7), requestSeq: g.request ?? 0n };
          events.push(ev(EventKind.EVENT_APPROVAL_RESULT, { case: "approvalResult", value }, id));
        } else {
          gates.delete(id);
          const value = { id: g.call, approvalRequestSeq: g.request ?? 0n, approvalDecisionSeq: g.decision ?? 0n };
          events.push(ev(EventKind.EVENT_TOOL_RESULT, { case: "result", value }, id));
        }
        continue;
      }
      const k = wrong() ? 8 + r.int(3) : r.int(8);
      // An ERROR leaves the generator's INPUTs coming (the parse refuses them): late INPUTs are frequent enough to test.
      if (k !== 0 && k !== 4 && k !== 7) st.effects = true;
      switch (k) {
        case 0:
          events.push(st.effects && !wrong() ? output(id) : input(id));
          st.effects ||= events[events.length - 1]!.kind === EventKind.EVENT_OUTPUT;
          break;
        case 1:
        case 2:
          events.push(output(id));
          break;
        case 3:
          st.ended = true;
          events.push(end(id));
          break;
        case 4:
          events.push(error(id));
          break;
        case 5: {
          const call = `g${n}`;
          gates.set(id, { call, next: EventKind.EVENT_APPROVAL_REQUEST });
          events.push(ev(EventKind.EVENT_TOOL_CALL, { case: "tool", value: { id: call, idempotencyKey: "k", mediation: Mediation.REQUIRES_APPROVAL } }, id));
          break;
        }
        case 6:
          events.push(output(id), compactionMarker(id, BigInt(r.int(Number(wrong() ? head + 1n : st.first)))));
          break;
        case 7:
          events.push(lifecycle());
          break;
        case 8:
          events.push(start(id, 0n));
          break;
        case 9:
          events.push(ev(EventKind.EVENT_APPROVAL_RESULT, { case: "approvalResult", value: { toolCallId: "stray", requestSeq: head } }, id));
          break;
        default:
          events.push(output(`ghost${n}`));
      }
    }
    return log(...events);
  }

  it("parse: on 3,000 random journals of interleaved executions it says what the whole parse says, of malformations, the latest execution and every decision", () => {
    let malformed = 0;
    let decisions = 0;
    let earlierDecisions = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const r = rng(seed);
      const records = interleaved(r, 5 + r.int(60));
      const whole = parseExecutions(records);
      const l = latestOnly(records);
      const view = l.latestView(() => []);
      if (!whole.ok) {
        malformed++;
        expect(view).toEqual(whole);
        continue;
      }
      if (!view.ok) throw new Error(`seed ${seed}: latest-only parse is malformed where the whole one is not: ${view.detail}`);
      const latest = latestExecution(whole);
      expect(view.executions).toEqual(latest ? [latest] : []);
      expect(view.lastForkSeq).toBe(whole.lastForkSeq);
      for (const ex of whole.executions)
        for (const e of ex.effects) {
          const b = e.event.body;
          if (b.case !== "approvalResult") continue;
          decisions++;
          if (ex !== latest) earlierDecisions++;
          expect(l.decision(ex.id, b.value.toolCallId, b.value.requestSeq)).toEqual(e);
          expect(l.decision(ex.id, b.value.toolCallId, b.value.requestSeq + 1000n)).toBeUndefined();
        }
    }
    // Both outcomes, and decisions of executions that are no longer the latest.
    expect(malformed).toBeGreaterThan(300);
    expect(malformed).toBeLessThan(2700);
    expect(earlierDecisions).toBeGreaterThan(100);
    expect(decisions).toBeGreaterThan(earlierDecisions);
  });

  /** What a store keeps of a log's checkpoints: the rows of each merged over the previous ones. */
  class CheckpointRows {
    earlier = new Map<string, number>();
    decisions = new Map<bigint, string>();
    last: LogCheckpoint | undefined;
    take(l: ExecutionLog): void {
      const cp = l.checkpoint();
      for (const [id, packed] of cp.earlier) this.earlier.set(id, packed);
      for (const [id, seq] of cp.decisions) this.decisions.set(seq, id);
      this.last = cp;
    }
    /** The log as restored from these rows and the journal `records` (seq i at index i - 1). */
    restore(records: LoggedEvent[]): ExecutionLog {
      const cp = this.last!;
      const from = cp.latest?.firstSeq ?? cp.through;
      return ExecutionLog.restore({
        ...cp,
        earlier: (id) => this.earlier.get(id),
        decisions: (id) =>
          [...this.decisions]
            .filter(([, executionId]) => executionId === id)
            .map(([seq]) => records[Number(seq) - 1]!)
            .sort((a, b) => (a.seq < b.seq ? -1 : 1)),
        records: cp.through === 0n ? [] : records.slice(Number(from) - 1, Number(cp.through)),
      });
    }
  }

  it("parse: restored from its checkpoints at random points and fed the rest, on 2,000 random journals, it says what it says fed every record (checkpoints of a latest-only or a whole parse)", () => {
    let restoredLatest = 0;
    let wholeRows = 0;
    for (let seed = 1; seed <= 2000; seed++) {
      const r = rng(seed);
      const records = interleaved(r, 5 + r.int(60));
      const fed = latestOnly(records);
      // Checkpoints at one to three points; at each, the object may start again from the rows.
      const cuts = [...new Set(Array.from({ length: 1 + r.int(3) }, () => r.int(records.length + 1)))].sort((a, b) => a - b);
      const rows = new CheckpointRows();
      // A session holding its journal in memory takes them of its whole parse.
      let l = seed % 2 === 1 ? new ExecutionLog(true) : new ExecutionLog(false, true);
      let at = 0;
      for (const cut of cuts) {
        for (; at < cut; at++) l.push(records[at]!.seq, records[at]!.event);
        rows.take(l);
        if (r.chance(0.7)) {
          l = rows.restore(records);
          restoredLatest += Number(rows.last!.latest !== undefined);
        }
      }
      for (; at < records.length; at++) l.push(records[at]!.seq, records[at]!.event);
      const none = () => [];
      const want = fed.latestView(none);
      expect(l.latestView(none), `seed ${seed}`).toEqual(want);
      expect(l.latestOpen()).toBe(fed.latestOpen());
      // A malformed journal carries no decision (approvals.ts refuses before it asks).
      for (const e of want.ok ? records : []) {
        const b = e.event.body;
        if (b.case !== "approvalResult") continue;
        expect(l.decision(e.event.executionId, b.value.toolCallId, b.value.requestSeq)).toEqual(
          fed.decision(e.event.executionId, b.value.toolCallId, b.value.requestSeq),
        );
      }
      // A checkpoint taken now holds what one of the log fed every record holds.
      const now = l.checkpoint();
      const whole = fed.checkpoint();
      expect({ ...now, earlier: [], decisions: [] }).toEqual({ ...whole, earlier: [], decisions: [] });
      for (const [id, packed] of now.earlier) rows.earlier.set(id, packed);
      for (const [id, seq] of now.decisions) rows.decisions.set(seq, id);
      if (!want.ok) continue;
      expect(rows.earlier, `seed ${seed}`).toEqual(new Map(whole.earlier));
      expect(rows.decisions, `seed ${seed}`).toEqual(new Map(whole.decisions.map(([id, seq]) => [seq, id])));
      wholeRows += Number(seed % 2 === 0 && whole.decisions.length > 0);
    }
    expect(restoredLatest).toBeGreaterThan(500);
    expect(wholeRows).toBeGreaterThan(100);
  });

  it("parse: a restore refuses rows that do not fit the journal", () => {
    const records = log(start("a", 1n), input("a", "first"), output("a"), start("b", 0n), output("b"));
    const l = latestOnly(records);
    const cp = l.checkpoint();
    const rows = { ...cp, earlier: (id: string) => new Map(cp.earlier).get(id), decisions: () => [] };
    expect(() => ExecutionLog.restore({ ...rows, records: records.slice(3) })).not.toThrow();
    expect(() => ExecutionLog.restore({ ...rows, records: records.slice(4) })).toThrow(/no EXECUTION_START at 4/);
    expect(() => ExecutionLog.restore({ ...rows, latest: { id: "b", firstSeq: 3n }, records: records.slice(2) })).toThrow(/no EXECUTION_START at 3/);
    expect(() => ExecutionLog.restore({ ...rows, records: records.slice(3, 4) })).toThrow(/do not reach seq 5/);
  });

  it("parse: it keeps the latest execution whole and, of earlier ones, their decisions; it has no whole view", () => {
    const records = log(start("a", 1n), input("a", "first"), ...gate("a", 2n), end("a"), start("b", 1n), input("b", "second"), output("b"));
    const l = latestOnly(records);
    const whole = parseExecutions(records);
    if (!whole.ok) throw new Error(whole.detail);
    const view = l.latestView(() => []);
    if (!view.ok) throw new Error(view.detail);
    expect(view.executions).toEqual([whole.executions[1]]);
    expect(view.events).toEqual([]);
    expect(l.decision("a", "ga", 4n)).toEqual(records[4]);
    expect(l.decision("a", "ga", 3n)).toBeUndefined();
    expect(l.decision("b", "ga", 4n)).toBeUndefined();
    expect(() => l.view(records)).toThrow(/latest-only/);
  });
});

describe("checkInputs", () => {
  const only = (...events: Event[]) => {
    const p = parseExecutions(log(...events));
    if (!p.ok) throw new Error(p.detail);
    return p.executions[0]!;
  };

  it("inputs: a matching count, including an explicit zero, is complete", () => {
    expect(checkInputs(only(start("a", 2n), input("a"), input("a")))).toEqual({ ok: true });
    expect(checkInputs(only(start("a", 0n)))).toEqual({ ok: true });
  });

  it("inputs: missing, negative and excess counts are invalid, not incomplete", () => {
    expect(checkInputs(only(start("a"), input("a")))).toMatchObject({ ok: false, incomplete: false });
    expect(checkInputs(only(start("a", -1n)))).toMatchObject({ ok: false, incomplete: false });
    expect(checkInputs(only(start("a", 1n), input("a"), input("a")))).toMatchObject({ ok: false, incomplete: false });
    // A payloadless INPUT is an input-completeness failure (§2.6), judged per execution, not a parse error.
    const payloadless = create(EventSchema, { executionId: "a", kind: EventKind.EVENT_INPUT });
    expect(checkInputs(only(start("a", 1n), payloadless))).toMatchObject({ ok: false, incomplete: false, detail: "INPUT at 2 has no message" });
    expect(checkInputs(only(start("a", 2n), input("a"), payloadless))).toMatchObject({ ok: false, incomplete: false });
  });

  it("inputs: fewer inputs on an execution that never ran is an incomplete invocation", () => {
    expect(checkInputs(only(start("a", 2n), input("a")))).toMatchObject({ ok: false, incomplete: true });
    expect(checkInputs(only(start("a", 2n)))).toMatchObject({ ok: false, incomplete: true });
    // A completed turn that is count-short is malformed, not incomplete.
    expect(checkInputs(only(start("a", 2n), input("a"), end("a")))).toMatchObject({ ok: false, incomplete: false });
  });
});
