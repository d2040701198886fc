/**
 * A journal as a person reads it: turns (the records of one execution, with the lifecycle markers
 * that fall inside them), what each turn asked and answered, how it ended, how long each turn,
 * model call and tool call took (from Event.ts, when the host stamped it), and token usage per
 * model call, turn and session (from USAGE records). Pure; the timeline view renders it.
 * Tested in test/node/ui/journal-model.test.ts.
 */
import { EventKind, type LogRecord, type Usage } from "../proto/gen/agentsessions/v1/common_pb.js";
import { textOf } from "../proto/messages.js";
import { msOf } from "./format.js";

export interface UsageTotals {
  input: bigint;
  output: bigint;
  reasoning: bigint;
  /** USAGE records counted. */
  reports: number;
}

export function noUsage(): UsageTotals {
  return { input: 0n, output: 0n, reasoning: 0n, reports: 0 };
}

export function addUsage(to: UsageTotals, u: Usage): void {
  to.input += u.inputTokens;
  to.output += u.outputTokens;
  to.reasoning += u.reasoningTokens;
  to.reports++;
}

export function totalTokens(u: UsageTotals): bigint {
  return u.input + u.output;
}

export interface RecordTiming {
  /** When the host wrote it (Event.ts); unset in journals written before the host stamped it. */
  atMs?: number;
  /** Since the record before it. */
  sincePrevMs?: number;
  /** A MODEL_CALL until the next record of its execution (its answer); a TOOL_CALL until its receipt. */
  tookMs?: number;
  /** For a MODEL_CALL: what the USAGE records after it reported. */
  usage?: UsageTotals;
}

export type TurnState = "completed" | "failed" | "canceled" | "awaiting" | "open";

export interface Turn {
  /** Stable across updates: "turn:<execution id>" or "marker:<seq>". */
  key: string;
  /** "" for a lifecycle marker outside any turn. */
  executionId: string;
  /** 1-based among turns; 0 for a marker. */
  number: number;
  records: LogRecord[];
  firstSeq: bigint;
  lastSeq: bigint;
  state: TurnState;
  harness: string;
  input: string;
  output: string;
  modelCalls: number;
  toolCalls: number;
  usage: UsageTotals;
  startMs?: number;
  endMs?: number;
  /** The code of the turn's ERROR record, if it has one. */
  errorCode?: number;
}

export interface Timeline {
  turns: Turn[];
  timing: Map<bigint, RecordTiming>;
  usage: UsageTotals;
  /** Whether any record carries a time. */
  timed: boolean;
}

/** Builds the timeline of records in seq order. */
export function buildTimeline(records: readonly LogRecord[]): Timeline {
  const timing = new Map<bigint, RecordTiming>();
  const byExec = new Map<string, LogRecord[]>();
  const markers: LogRecord[] = [];
  const usage = noUsage();
  let prevMs: number | undefined;
  let timed = false;
  for (const r of records) {
    const atMs = msOf(r.event?.ts);
    timed ||= atMs !== undefined;
    timing.set(r.seq, { atMs, sincePrevMs: atMs !== undefined && prevMs !== undefined ? atMs - prevMs : undefined });
    prevMs = atMs ?? prevMs;
    const exec = r.event?.executionId ?? "";
    if (exec === "") markers.push(r);
    else {
      let list = byExec.get(exec);
      if (!list) byExec.set(exec, (list = []));
      list.push(r);
    }
    if (r.event?.body.case === "usage") addUsage(usage, r.event.body.value);
  }

  const turns: Turn[] = [...byExec.entries()].map(([exec, rs], i) => turnOf(exec, i + 1, rs, timing));
  // A marker inside a turn's span (the SUSPEND of a parked gate, say) is shown in that turn.
  for (const m of markers) {
    const host = turns.find((t) => t.number > 0 && t.firstSeq < m.seq && m.seq < t.lastSeq);
    if (host) host.records = [...host.records, m].sort((a, b) => (a.seq < b.seq ? -1 : 1));
    else turns.push(markerOf(m, timing));
  }
  turns.sort((a, b) => (a.firstSeq < b.firstSeq ? -1 : 1));
  return { turns, timing, usage, timed };
}

function turnOf(executionId: string, number: number, rs: LogRecord[], timing: Map<bigint, RecordTiming>): Turn {
  const t: Turn = {
    key: "turn:" + executionId,
    executionId,
    number,
    records: rs,
    firstSeq: rs[0]!.seq,
    lastSeq: rs[rs.length - 1]!.seq,
    state: "open",
    harness: "",
    input: "",
    output: "",
    modelCalls: 0,
    toolCalls: 0,
    usage: noUsage(),
  };
  let ended: TurnState | undefined;
  let failed = false;
  const openGates = new Set<string>();
  let lastModelSeq: bigint | undefined;
  rs.forEach((r, i) => {
    const ev = r.event!;
    const at = timing.get(r.seq)?.atMs;
    if (at !== undefined) {
      t.startMs ??= at;
      t.endMs = at;
    }
    const body = ev.body;
    switch (body.case) {
      case "executionStart":
        t.harness = body.value.harness;
        break;
      case "message":
        if (ev.kind === EventKind.EVENT_INPUT && t.input === "") t.input = textOf(body.value);
        if (ev.kind === EventKind.EVENT_OUTPUT && textOf(body.value) !== "") t.output = textOf(body.value);
        break;
      case "model": {
        t.modelCalls++;
        lastModelSeq = r.seq;
        const answerAt = timing.get(rs[i + 1]?.seq ?? -1n)?.atMs;
        if (at !== undefined && answerAt !== undefined) timing.get(r.seq)!.tookMs = answerAt - at;
        break;
      }
      case "tool": {
        t.toolCalls++;
        const id = body.value.id;
        const receipt = rs.find((x) => x.seq > r.seq && x.event?.body.case === "result" && x.event.body.value.id === id);
        const doneAt = receipt && timing.get(receipt.seq)?.atMs;
        if (at !== undefined && doneAt !== undefined) timing.get(r.seq)!.tookMs = doneAt - at;
        break;
      }
      case "approval":
        openGates.add(body.value.toolCallId);
        break;
      case "approvalResult":
        openGates.delete(body.value.toolCallId);
        break;
      case "usage": {
        addUsage(t.usage, body.value);
        if (lastModelSeq !== undefined) {
          const m = timing.get(lastModelSeq)!;
          m.usage ??= noUsage();
          addUsage(m.usage, body.value);
        }
        break;
      }
      case "end":
        ended = endState(body.value.state);
        if (body.value.error?.code) t.errorCode = body.value.error.code;
        break;
      case "error":
        failed = true;
        t.errorCode = body.value.code;
        break;
    }
  });
  t.state = ended ?? (failed ? "failed" : openGates.size > 0 ? "awaiting" : "open");
  return t;
}

function endState(state: string): TurnState {
  switch (state.toUpperCase()) {
    case "COMPLETED":
      return "completed";
    case "CANCELED":
    case "CANCELLED":
      return "canceled";
    default:
      return "failed";
  }
}

function markerOf(r: LogRecord, timing: Map<bigint, RecordTiming>): Turn {
  const at = timing.get(r.seq)?.atMs;
  return {
    key: "marker:" + r.seq.toString(),
    executionId: "",
    number: 0,
    records: [r],
    firstSeq: r.seq,
    lastSeq: r.seq,
    state: "completed",
    harness: "",
    input: "",
    output: "",
    modelCalls: 0,
    toolCalls: 0,
    usage: noUsage(),
    startMs: at,
    endMs: at,
  };
}

/** Token totals of the USAGE records with seq > afterSeq (a branch's own usage after its fork point). */
export function usageOf(records: readonly LogRecord[], afterSeq = 0n): UsageTotals {
  const u = noUsage();
  for (const r of records) if (r.seq > afterSeq && r.event?.body.case === "usage") addUsage(u, r.event.body.value);
  return u;
}
