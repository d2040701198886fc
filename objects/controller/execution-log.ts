/**
 * Splits a journal into executions (docs/behaviour.md §2.4, step 1-2) and checks what replay and
 * recovery rely on: every non-lifecycle record names its execution, each execution starts with
 * exactly one EXECUTION_START, its INPUTs follow the marker, `input_count` matches them (§2.6), and
 * an approval gate's records come in order with nothing between them (§4.11, checklist §8.14 #94,
 * #115): a continuation past an unresolved gate, or a gate receipt without its request and
 * decision, is an invalid log, not something a harness can diverge from.
 *
 * Pure: takes decoded records, returns a model of the executions or the first malformation.
 * Tested in test/node/controller/execution-log.test.ts.
 */
import {
  EventKind,
  Lifecycle_Kind,
  Mediation,
  ToolResult_Code,
  type Event,
  type ExecutionStart,
  type Message,
} from "../../proto/gen/agentsessions/v1/common_pb.js";
import { boundHistory, compactedThrough, isSummary } from "../../runtimes/compaction.js";

export interface LoggedEvent {
  seq: bigint;
  event: Event;
}

export interface Execution {
  id: string;
  /** Index (into the parsed list) of the execution's first record; history is everything before it. */
  firstIndex: number;
  firstSeq: bigint;
  lastSeq: bigint;
  start: ExecutionStart;
  inputs: Message[];
  /**
   * The seq of the first INPUT that carries no message. Malformed input, but like a count mismatch
   * it is judged by checkInputs (§2.6), so Replay skips it on an incomplete execution.
   */
  payloadlessInput?: bigint;
  /** Effects in journal order: MODEL_CALL, OUTPUT, TOOL_CALL, TOOL_RESULT, USAGE, APPROVAL_*. */
  effects: LoggedEvent[];
  /** The END record's state, when the execution has one. */
  endState?: string;
  /** ERROR records (audit only: they end nothing). */
  errors: bigint[];
}

export type ParsedLog =
  | {
      ok: true;
      events: LoggedEvent[];
      executions: Execution[];
      /** The seq of the journal's latest LIFECYCLE(FORK) marker, 0 when it has none. */
      lastForkSeq: bigint;
      /**
       * Set on the parse a session keeps of a journal too large to hold decoded in memory
       * (ExecutionLog's latest-only mode, objects/session/session-cache.ts): `executions` then holds
       * the latest execution alone, `events` none of the records, and an execution's Start.history
       * comes from here. Replay needs the whole parse and refuses this one.
       */
      latestOnly?: { history(ex: Execution): Event[] };
    }
  | { ok: false; seq: bigint; detail: string };

/** An earlier execution (latest-only) takes no more INPUT: it has effects, an END or an ERROR. */
const EARLIER_CLOSED = 1;
/** An earlier execution (latest-only) has its END. */
const EARLIER_ENDED = 2;

const EFFECT_KINDS = new Set<EventKind>([
  EventKind.EVENT_LIFECYCLE, // a compaction marker only: other LIFECYCLE records are session-scoped
  EventKind.EVENT_MODEL_CALL,
  EventKind.EVENT_OUTPUT,
  EventKind.EVENT_TOOL_CALL,
  EventKind.EVENT_TOOL_RESULT,
  EventKind.EVENT_USAGE,
  EventKind.EVENT_APPROVAL_REQUEST,
  EventKind.EVENT_APPROVAL_RESULT,
]);

export function parseExecutions(events: LoggedEvent[]): ParsedLog {
  const log = new ExecutionLog();
  for (const e of events) log.push(e.seq, e.event);
  return log.view(events);
}

/**
 * parseExecutions, one record at a time: the session keeps one per journal and feeds it every
 * record it appends, so no operation re-parses the journal (objects/session/session-cache.ts).
 * Feeding the journal's records in order and asking for the `view` gives exactly what
 * parseExecutions gives for them (test/node/controller/execution-log.test.ts checks it on long,
 * randomized journals). Once a record is malformed the log stays malformed at that record.
 *
 * Latest-only (`new ExecutionLog(true)`), it checks every record the same way but keeps only what
 * operations on the session's latest execution need: that execution whole, and of every earlier one
 * its approval decisions (`decision`, for a retried decision) and what the checks look at, one
 * number (`_earlier`). Its memory then grows with the number of executions, about 100 to 150 bytes
 * each (npm run bench:memory), not with their records (`latestView`).
 */
export class ExecutionLog {
  private readonly _byId = new Map<string, Execution>();
  private readonly _order: Execution[] = [];
  private readonly _gates = new Map<string, OpenGate>();
  /**
   * Latest-only: every earlier execution as one number, `firstSeq * 4 + flags` (EARLIER_*), which
   * is all the checks read of it; an object per execution cost about 400 bytes, this about 100 (npm run bench:memory).
   */
  private readonly _earlier = new Map<string, number>();
  /** Latest-only, restored: where `_earlier` entries not yet looked up this life are (the stored checkpoint). */
  private _earlierSource: ((id: string) => number | undefined) | undefined;
  /** Latest-only: the APPROVAL_RESULTs of earlier executions that recorded one (`decision`). */
  private readonly _decisions = new Map<string, LoggedEvent[]>();
  /** Latest-only, restored: where the decisions stored before this object life are, and the executions already asked for. */
  private _decisionsSource: ((id: string) => LoggedEvent[]) | undefined;
  private readonly _decisionsAsked = new Set<string>();
  /** Latest-only, restored: the seq its checkpoint was taken after. */
  private _restoredThrough = 0n;
  /**
   * Executions a `checkpoint` has to write again: latest-only, the earlier ones whose `_earlier`
   * entry changed since the last one; whole, every one that gained a record since (the latest
   * stays in it until it is no longer the latest).
   */
  private readonly _changed = new Set<string>();
  /** Latest-only: decisions that `_decisions` gained since the last `checkpoint`. */
  private _newDecisions: [string, bigint][] = [];
  private _bad: { seq: bigint; detail: string } | undefined;
  private _index = 0;
  private _lastForkSeq = 0n;
  private _prev: Event | undefined;
  /** The seq of the last record pushed (0 before any). */
  private _through = 0n;

  /**
   * `checkpoints`: a whole parse that will take checkpoints notes which executions changed (a
   * latest-only one always does); a parse for one replay or audit does not pay for it.
   */
  constructor(
    private readonly _latestOnly = false,
    private readonly _tracked = _latestOnly,
  ) {}

  push(seq: bigint, event: Event): void {
    const i = this._index++;
    const prev = this._prev;
    this._prev = event;
    this._through = seq;
    if (this._bad) return;
    // A compaction marker belongs to its execution (docs/history.md): an effect replay serves.
    if (event.kind === EventKind.EVENT_LIFECYCLE && compactedThrough(event) === undefined) {
      if (event.body.case === "lifecycle" && event.body.value.kind === Lifecycle_Kind.LIFECYCLE_FORK) this._lastForkSeq = seq;
      return;
    }
    const bad = (detail: string) => {
      this._bad = { seq, detail };
    };
    if (event.executionId === "") return bad(`record ${seq} (${EventKind[event.kind] ?? event.kind}) has no execution id`);
    let ex = this._byId.get(event.executionId);
    if (!ex) {
      const earlier = this._earlierOf(event.executionId);
      if (earlier !== undefined) return this._pushEarlier(event.executionId, earlier, seq, event, prev, bad);
      if (event.kind !== EventKind.EVENT_EXECUTION_START) {
        return bad(`execution ${event.executionId} does not begin with EXECUTION_START (record ${seq})`);
      }
      if (event.body.case !== "executionStart") return bad(`EXECUTION_START at ${seq} has no body`);
      ex = { id: event.executionId, firstIndex: i, firstSeq: seq, lastSeq: seq, start: event.body.value, inputs: [], effects: [], errors: [] };
      this._byId.set(ex.id, ex);
      if (this._latestOnly) {
        const before = this._order.pop();
        if (before) this._retire(before);
      } else if (this._tracked) this._changed.add(ex.id);
      this._order.push(ex);
      return;
    }
    switch (event.kind) {
      case EventKind.EVENT_EXECUTION_START:
        return bad(`execution ${ex.id} has a second EXECUTION_START at ${seq}`);
      case EventKind.EVENT_INPUT:
        if (ex.effects.length > 0 || ex.endState !== undefined || ex.errors.length > 0) {
          return bad(inputAfterEffects(seq));
        }
        break;
      case EventKind.EVENT_END:
        if (ex.endState !== undefined) return bad(`execution ${ex.id} has a second END at ${seq}`);
        break;
      case EventKind.EVENT_ERROR:
        break;
      default: {
        if (!EFFECT_KINDS.has(event.kind)) return bad(unexpectedKind(seq, event));
        if (ex.endState !== undefined) return bad(effectAfterEnd(seq));
        const misplaced = stepGate(this._gates, ex.id, seq, event) ?? misplacedCompaction(ex.firstSeq, seq, event, prev);
        if (misplaced) return bad(misplaced);
      }
    }
    addRecord(ex, seq, event);
    if (this._tracked && !this._latestOnly) this._changed.add(ex.id);
  }

  /**
   * Latest-only: a record of an execution that is no longer the latest, checked as `push` checks
   * it from what `_retire` kept.
   */
  private _pushEarlier(id: string, earlier: number, seq: bigint, event: Event, prev: Event | undefined, bad: (detail: string) => void): void {
    const firstSeq = BigInt(Math.floor(earlier / 4));
    const flags = earlier % 4;
    const set = (f: number) => {
      if ((flags & f) === f) return;
      this._earlier.set(id, earlier - flags + (flags | f));
      this._changed.add(id);
    };
    switch (event.kind) {
      case EventKind.EVENT_EXECUTION_START:
        return bad(`execution ${id} has a second EXECUTION_START at ${seq}`);
      case EventKind.EVENT_INPUT:
        if (flags & EARLIER_CLOSED) return bad(inputAfterEffects(seq));
        return;
      case EventKind.EVENT_END:
        if (flags & EARLIER_ENDED) return bad(`execution ${id} has a second END at ${seq}`);
        return set(EARLIER_ENDED | EARLIER_CLOSED);
      case EventKind.EVENT_ERROR:
        return set(EARLIER_CLOSED);
      default: {
        if (!EFFECT_KINDS.has(event.kind)) return bad(unexpectedKind(seq, event));
        if (flags & EARLIER_ENDED) return bad(effectAfterEnd(seq));
        const misplaced = stepGate(this._gates, id, seq, event) ?? misplacedCompaction(firstSeq, seq, event, prev);
        if (misplaced) return bad(misplaced);
        if (event.kind === EventKind.EVENT_APPROVAL_RESULT) this._decide(id, { seq, event });
        set(EARLIER_CLOSED);
      }
    }
  }

  /** Latest-only: an execution no longer the latest becomes its first seq, flags and decisions. */
  private _retire(ex: Execution): void {
    this._byId.delete(ex.id);
    this._earlier.set(ex.id, packEarlier(ex));
    this._changed.add(ex.id);
    for (const e of ex.effects) if (e.event.kind === EventKind.EVENT_APPROVAL_RESULT) this._decide(ex.id, e);
  }

  /** An earlier execution's entry, looked up in the stored checkpoint the first time a restored log needs it. */
  private _earlierOf(id: string): number | undefined {
    let packed = this._earlier.get(id);
    if (packed === undefined && this._earlierSource) {
      packed = this._earlierSource(id);
      if (packed !== undefined) this._earlier.set(id, packed);
    }
    return packed;
  }

  private _decide(id: string, e: LoggedEvent): void {
    const list = this._decisions.get(id);
    if (list) list.push(e);
    else this._decisions.set(id, [e]);
    this._newDecisions.push([id, e.seq]);
  }

  /** An earlier execution's decisions: those stored before this object life (asked for once), then this life's. */
  private _decisionsOf(id: string): LoggedEvent[] | undefined {
    if (this._decisionsSource && !this._decisionsAsked.has(id)) {
      this._decisionsAsked.add(id);
      // Those of this life, which a checkpoint since may have stored too, are in memory already.
      const stored = this._decisionsSource(id).filter((e) => e.seq <= this._restoredThrough);
      if (stored.length > 0) this._decisions.set(id, [...stored, ...(this._decisions.get(id) ?? [])]);
    }
    return this._decisions.get(id);
  }

  /**
   * What a latest-only parse keeps, as of the last record pushed, for a store to keep across
   * object lives (objects/session/parse-checkpoint.ts). Earlier executions and decisions come as
   * what changed since the previous checkpoint (everything, on the first); the rest whole. A whole
   * parse gives the same rows (its executions but the latest, as latest-only keeps them), so a
   * session that holds its journal in memory keeps the checkpoint too. `ExecutionLog.restore` of
   * the store's merged rows, then pushing the records after `through`, gives the same parse as
   * pushing every record (test/node/controller/execution-log.test.ts).
   */
  checkpoint(): LogCheckpoint {
    if (!this._tracked) throw new Error("this ExecutionLog was made without checkpoints");
    const last = this._order[this._order.length - 1];
    const earlier: [string, number][] = [];
    const decisions: [string, bigint][] = this._latestOnly ? this._newDecisions : [];
    for (const id of this._changed) {
      if (this._latestOnly) {
        earlier.push([id, this._earlier.get(id)!]);
        continue;
      }
      if (id === last?.id) continue;
      const ex = this._byId.get(id)!;
      earlier.push([id, packEarlier(ex)]);
      for (const e of ex.effects) if (e.event.kind === EventKind.EVENT_APPROVAL_RESULT) decisions.push([id, e.seq]);
    }
    this._changed.clear();
    // Whole: the latest is written once it is no longer the latest.
    if (!this._latestOnly && last) this._changed.add(last.id);
    this._newDecisions = [];
    const at = { through: this._through, index: this._index, lastForkSeq: this._lastForkSeq };
    // A malformed log answers with its malformation alone, whatever else it holds.
    if (this._bad) return { ...at, bad: { ...this._bad }, gates: [], earlier: [], decisions: [] };
    return {
      ...at,
      gates: [...this._gates].map(([id, g]) => [id, { ...g }]),
      latest: last && { id: last.id, firstSeq: last.firstSeq },
      earlier,
      decisions,
    };
  }

  /**
   * A latest-only log as it was at a checkpoint: `earlier` and `decisions` merged over every
   * checkpoint taken (each looked up when a record or a `decision` asks), and `records` the
   * journal's records from the latest execution's EXECUTION_START through `through` (the record at
   * `through` alone when there is no latest execution). Throws on rows that do not fit together;
   * the caller then parses the journal from its start.
   */
  static restore(cp: RestoredCheckpoint): ExecutionLog {
    const log = new ExecutionLog(true);
    log._index = cp.index;
    log._lastForkSeq = cp.lastForkSeq;
    log._through = cp.through;
    const last = cp.records[cp.records.length - 1];
    if (cp.through > 0n && last?.seq !== cp.through) throw new Error(`the checkpoint's records do not reach seq ${cp.through}`);
    log._prev = last?.event;
    if (cp.bad) {
      log._bad = { ...cp.bad };
      return log;
    }
    log._earlierSource = cp.earlier;
    log._decisionsSource = cp.decisions;
    log._restoredThrough = cp.through;
    for (const [id, g] of cp.gates) log._gates.set(id, { ...g });
    if (cp.latest) {
      const at = cp.records.findIndex((r) => r.seq === cp.latest!.firstSeq);
      const start = cp.records[at]?.event;
      if (start?.executionId !== cp.latest.id || start.body.case !== "executionStart")
        throw new Error(`the checkpoint's latest execution ${cp.latest.id} has no EXECUTION_START at ${cp.latest.firstSeq}`);
      const ex: Execution = {
        id: cp.latest.id,
        firstIndex: cp.index - (cp.records.length - at),
        firstSeq: cp.latest.firstSeq,
        lastSeq: cp.latest.firstSeq,
        start: start.body.value,
        inputs: [],
        effects: [],
        errors: [],
      };
      // These records passed push's checks when the checkpoint was taken: they are only added again.
      for (const { seq, event } of cp.records.slice(at + 1)) {
        if (event.executionId !== ex.id) continue;
        if (event.kind === EventKind.EVENT_LIFECYCLE && compactedThrough(event) === undefined) continue;
        addRecord(ex, seq, event);
      }
      log._byId.set(ex.id, ex);
      log._order.push(ex);
    }
    return log;
  }

  /**
   * The decision recorded for the gate of `toolCallId` whose request is at `requestSeq`, in
   * execution `executionId`, if there is one (what an exact retry of a decision gets back).
   */
  decision(executionId: string, toolCallId: string, requestSeq: bigint): LoggedEvent | undefined {
    const effects = this._byId.get(executionId)?.effects ?? this._decisionsOf(executionId);
    return effects?.find((e) => {
      const b = e.event.body;
      return (
        e.event.kind === EventKind.EVENT_APPROVAL_RESULT &&
        b.case === "approvalResult" &&
        b.value.toolCallId === toolCallId &&
        b.value.requestSeq === requestSeq
      );
    });
  }

  /**
   * Latest-only: the parse as operations on the latest execution see it (ParsedLog.latestOnly),
   * `history` giving an execution's Start.history.
   */
  latestView(history: (ex: Execution) => Event[]): ParsedLog {
    if (this._bad) return { ok: false, seq: this._bad.seq, detail: this._bad.detail };
    const last = this._order[this._order.length - 1];
    const executions = last ? [{ ...last, inputs: last.inputs.slice(), effects: last.effects.slice(), errors: last.errors.slice() }] : [];
    return { ok: true, events: [], executions, lastForkSeq: this._lastForkSeq, latestOnly: { history } };
  }

  /**
   * The parse of the records pushed so far (`events` must be those records). Later pushes do not
   * change what a view holds: the one execution they can still grow, the latest, is copied.
   */
  view(events: LoggedEvent[]): ParsedLog {
    if (this._latestOnly) throw new Error("a latest-only ExecutionLog has no whole view: use latestView");
    if (this._bad) return { ok: false, seq: this._bad.seq, detail: this._bad.detail };
    const executions = this._order.slice();
    const last = executions[executions.length - 1];
    if (last) executions[executions.length - 1] = { ...last, inputs: last.inputs.slice(), effects: last.effects.slice(), errors: last.errors.slice() };
    return { ok: true, events, executions, lastForkSeq: this._lastForkSeq };
  }

  /** Whether the latest execution never ended, read without building a view. */
  latestOpen(): boolean {
    if (this._bad) return false;
    const last = this._order[this._order.length - 1];
    return last !== undefined && last.endState === undefined;
  }
}

/** What a latest-only parse keeps of an execution no longer the latest: `firstSeq * 4 + flags` (EARLIER_*). */
function packEarlier(ex: Execution): number {
  const closed = ex.effects.length > 0 || ex.endState !== undefined || ex.errors.length > 0;
  return Number(ex.firstSeq) * 4 + (closed ? EARLIER_CLOSED : 0) + (ex.endState !== undefined ? EARLIER_ENDED : 0);
}

/** A record of an execution kept whole, past push's checks: what it adds to the execution. */
function addRecord(ex: Execution, seq: bigint, event: Event): void {
  ex.lastSeq = seq;
  switch (event.kind) {
    case EventKind.EVENT_INPUT:
      if (event.body.case !== "message") ex.payloadlessInput ??= seq;
      else ex.inputs.push(event.body.value);
      return;
    case EventKind.EVENT_END:
      ex.endState = event.body.case === "end" ? event.body.value.state : "";
      return;
    case EventKind.EVENT_ERROR:
      ex.errors.push(seq);
      return;
    default:
      ex.effects.push({ seq, event });
  }
}

/** What `ExecutionLog.checkpoint` gives: see there. */
export interface LogCheckpoint {
  /** The seq of the last record pushed before it (0: none). */
  through: bigint;
  /** Records pushed before it. */
  index: number;
  lastForkSeq: bigint;
  /** The first malformation: the checkpoint is then this alone. */
  bad?: { seq: bigint; detail: string };
  gates: [string, OpenGate][];
  /** The latest execution, which a restore builds again from its records. */
  latest?: { id: string; firstSeq: bigint };
  /** Earlier executions, id to `firstSeq * 4 + flags`, changed since the previous checkpoint. */
  earlier: [string, number][];
  /** Decisions of earlier executions recorded since the previous checkpoint: execution id and seq. */
  decisions: [string, bigint][];
}

/** What `ExecutionLog.restore` takes: a checkpoint's rows merged, and the records it names. */
export interface RestoredCheckpoint extends Omit<LogCheckpoint, "earlier" | "decisions"> {
  /**
   * An earlier execution's stored entry (`firstSeq * 4 + flags`), undefined for an id the rows do
   * not hold: asked only for the ids records after the checkpoint name, so a restore reads no row
   * per execution of history.
   */
  earlier: (id: string) => number | undefined;
  /** The stored decisions of an earlier execution, their records read back, in seq order. */
  decisions: (id: string) => LoggedEvent[];
  records: LoggedEvent[];
}

/** A gate of an execution still waiting for its next record: request, decision, then receipt. */
export interface OpenGate {
  callId: string;
  callSeq: bigint;
  next: EventKind.EVENT_APPROVAL_REQUEST | EventKind.EVENT_APPROVAL_RESULT | EventKind.EVENT_TOOL_RESULT;
}

const GATE_STEPS = {
  [EventKind.EVENT_APPROVAL_REQUEST]: EventKind.EVENT_APPROVAL_RESULT,
  [EventKind.EVENT_APPROVAL_RESULT]: EventKind.EVENT_TOOL_RESULT,
} as const;

/**
 * Advances the execution's gate past one effect, or says why the effect cannot come here. Only the
 * order of kinds is checked: whether the records correlate (call ids, seqs, the receipt's status)
 * is the recorded sink's divergence check. END and ERROR are not effects: a Cancel closes a parked
 * turn with END, and an ERROR (a failed handoff) leaves the gate open.
 */
function stepGate(gates: Map<string, OpenGate>, executionId: string, seq: bigint, event: Event): string | undefined {
  const open = gates.get(executionId);
  const kind = EventKind[event.kind] ?? String(event.kind);
  if (open) {
    if (event.kind !== open.next) {
      return `record ${seq} (${kind}) continues execution ${executionId} past the unresolved approval gate of tool call ${open.callId} (seq ${open.callSeq}), which expects ${EventKind[open.next]} next`;
    }
    if (event.kind === EventKind.EVENT_TOOL_RESULT) gates.delete(executionId);
    else open.next = GATE_STEPS[event.kind];
    return undefined;
  }
  switch (event.kind) {
    case EventKind.EVENT_TOOL_CALL:
      if (event.body.case === "tool" && event.body.value.mediation === Mediation.REQUIRES_APPROVAL) {
        // A gate is correlated by its call id: live refuses an empty one before the intent (checklist §8.14 #93).
        if (event.body.value.id === "") return `the approval-gated tool call at ${seq} has no id`;
        gates.set(executionId, { callId: event.body.value.id, callSeq: seq, next: EventKind.EVENT_APPROVAL_REQUEST });
      }
      return undefined;
    case EventKind.EVENT_APPROVAL_REQUEST:
    case EventKind.EVENT_APPROVAL_RESULT:
      return `${kind} at ${seq} does not follow an approval-gated tool call of execution ${executionId}`;
    case EventKind.EVENT_TOOL_RESULT: {
      const r = event.body.case === "result" ? event.body.value : undefined;
      if (r && (r.approvalRequestSeq !== 0n || r.approvalDecisionSeq !== 0n || r.code === ToolResult_Code.APPROVAL_DENIED)) {
        return `the gate receipt at ${seq} has no approval request and decision before it`;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** A compaction marker right after its summary, covering only records before its execution (docs/history.md). */
function misplacedCompaction(firstSeq: bigint, seq: bigint, event: Event, prev: Event | undefined): string | undefined {
  const through = compactedThrough(event);
  if (through === undefined) return undefined;
  if (!prev || !isSummary(prev, event)) return `the compaction marker at ${seq} does not follow its summary OUTPUT`;
  if (through >= firstSeq) return `the compaction marker at ${seq} covers seq ${through}, which is not before its execution (${firstSeq})`;
  return undefined;
}

const inputAfterEffects = (seq: bigint) => `INPUT at ${seq} comes after the execution's effects`;
const unexpectedKind = (seq: bigint, event: Event) => `record ${seq} has an unexpected kind ${event.kind}`;
const effectAfterEnd = (seq: bigint) => `effect at ${seq} comes after the execution's END`;

export type InputCheck = { ok: true } | { ok: false; incomplete: boolean; detail: string };

/**
 * Input completeness (docs/behaviour.md §2.6): the marker must record a non-negative count equal to
 * the committed INPUTs, each of which carries a message. Fewer inputs on an execution that never ran is an incomplete invocation.
 */
export function checkInputs(ex: Execution): InputCheck {
  const count = ex.start.inputCount;
  if (count === undefined) return { ok: false, incomplete: false, detail: `execution ${ex.id} records no input_count` };
  if (count < 0n) return { ok: false, incomplete: false, detail: `execution ${ex.id} records a negative input_count` };
  if (ex.payloadlessInput !== undefined) return { ok: false, incomplete: false, detail: `INPUT at ${ex.payloadlessInput} has no message` };
  const got = BigInt(ex.inputs.length);
  if (got === count) return { ok: true };
  if (got < count && ex.endState === undefined && ex.effects.length === 0) {
    return {
      ok: false,
      incomplete: true,
      detail: `execution ${ex.id} committed ${got} of its ${count} inputs, so it never reached the harness`,
    };
  }
  return { ok: false, incomplete: false, detail: `execution ${ex.id} records input_count ${count} but has ${got} INPUT records` };
}

/** The execution Resume would act on: the last one first seen in the journal. */
export function latestExecution(parsed: Extract<ParsedLog, { ok: true }>): Execution | undefined {
  return parsed.executions[parsed.executions.length - 1];
}

/**
 * The execution's Start.history: everything before its first record, from the latest compaction
 * point on (runtimes/compaction.ts), so live, recovered and replayed runs see the same events.
 */
export function historyOf(parsed: Extract<ParsedLog, { ok: true }>, ex: Execution): Event[] {
  if (parsed.latestOnly) return parsed.latestOnly.history(ex);
  return boundHistory(
    parsed.events.slice(0, ex.firstIndex).map((e) => e.event),
    ex.firstIndex,
  );
}
