/**
 * Compaction points (docs/history.md): how a bounded history looks, for the host that builds it and
 * the harnesses that read it. Plain TypeScript over contract messages, shared by the host
 * (objects/controller), the built-in chat harness and the Node harness SDK.
 *
 * A compaction point is two journal records of one execution, committed together: the OUTPUT of a
 * host-mediated model call (the summary), then `LIFECYCLE{kind: LIFECYCLE_BASELINE, detail:
 * "compaction@N"}` stamped with the execution's id. The contract declares LIFECYCLE_BASELINE for
 * "replay/compaction checkpoints" and writes none, so no new kind or field is needed: the detail
 * names the last seq the summary covers, as a fork marker's `parent@N` names its parent's seq.
 *
 * A history that starts at a compaction point is the summary's OUTPUT, its marker, and then every
 * record after seq N except those two (docs/history.md "What the harness sees").
 */
import { create } from "@bufbuild/protobuf";
import { EventKind, EventSchema, Lifecycle_Kind, type Event, type Message } from "../proto/gen/agentsessions/v1/common_pb.js";

const MARKER_PREFIX = "compaction@";

/**
 * What a remote harness sends over the tunnel right before the MODEL_CALL that produces its summary
 * (docs/tunnel.md "Compaction"): the same LIFECYCLE(BASELINE), with no seq, since the host picks N.
 */
export const COMPACTION_REQUEST_DETAIL = "compaction";

export interface CompactionPoint {
  /** The last journal seq the summary covers: the history handed over holds only records after it. */
  throughSeq: bigint;
  /** The summary (the compaction model call's answer). */
  summary: Message;
}

/** The marker record the host writes after a compaction's summary. */
export function compactionMarker(executionId: string, throughSeq: bigint): Event {
  return create(EventSchema, {
    executionId,
    kind: EventKind.EVENT_LIFECYCLE,
    body: { case: "lifecycle", value: { kind: Lifecycle_Kind.LIFECYCLE_BASELINE, detail: `${MARKER_PREFIX}${throughSeq}` } },
  });
}

/** The seq a compaction marker covers through, or undefined when `ev` is no compaction marker. */
export function compactedThrough(ev: Event): bigint | undefined {
  if (ev.kind !== EventKind.EVENT_LIFECYCLE || ev.body.case !== "lifecycle") return undefined;
  const l = ev.body.value;
  if (l.kind !== Lifecycle_Kind.LIFECYCLE_BASELINE || !l.detail.startsWith(MARKER_PREFIX)) return undefined;
  const digits = l.detail.slice(MARKER_PREFIX.length);
  if (!/^[1-9][0-9]{0,18}$/.test(digits)) return undefined;
  return BigInt(digits);
}

/** The tunnel's compaction request (see COMPACTION_REQUEST_DETAIL). */
export function compactionRequest(executionId: string): Event {
  return create(EventSchema, {
    executionId,
    kind: EventKind.EVENT_LIFECYCLE,
    body: { case: "lifecycle", value: { kind: Lifecycle_Kind.LIFECYCLE_BASELINE, detail: COMPACTION_REQUEST_DETAIL } },
  });
}

export function isCompactionRequest(ev: Event): boolean {
  return (
    ev.kind === EventKind.EVENT_LIFECYCLE &&
    ev.body.case === "lifecycle" &&
    ev.body.value.kind === Lifecycle_Kind.LIFECYCLE_BASELINE &&
    ev.body.value.detail === COMPACTION_REQUEST_DETAIL
  );
}

/**
 * The compaction point a history starts at, or undefined for a whole history. A harness reads it
 * from `HarnessStart.history`: `history[0]` is the summary's OUTPUT and `history[1]` its marker.
 */
export function compactionOf(history: readonly Event[]): CompactionPoint | undefined {
  const summary = history[0];
  const marker = history[1];
  if (!summary || !marker || !isSummary(summary, marker)) return undefined;
  const throughSeq = compactedThrough(marker);
  if (throughSeq === undefined || summary.body.case !== "message") return undefined;
  return { throughSeq, summary: summary.body.value };
}

/** Whether `summary` is the OUTPUT a compaction `marker` closes (same execution). */
export function isSummary(summary: Event, marker: Event): boolean {
  return summary.kind === EventKind.EVENT_OUTPUT && summary.body.case === "message" && summary.executionId !== "" && summary.executionId === marker.executionId;
}

/**
 * The history an execution sees, given the journal (`events[i]` is seq i + 1) and where its own
 * records begin (`end`, an index: the records before it are its history):
 * from its latest compaction point on, or all of it when it has none. Scans back from the end only
 * as far as that point, so with regular compactions the cost stays bounded by the tail's length.
 */
export function boundHistory(events: readonly Event[], end = events.length): Event[] {
  for (let m = end - 1; m >= 1; m--) {
    const n = markerAt(events, m);
    if (n !== undefined) return historyAt(events, end, m, n);
  }
  return events.slice(0, end);
}

/**
 * N when `events[m]` is a compaction point's marker: it follows its summary and compacts through
 * an N below its own place (the host only writes N below the compacting execution's start:
 * objects/controller/live-sink.ts). Depends on `events[m - 1]` and `events[m]` only, so a reader
 * that keeps the journal can note its markers as records arrive (objects/session/session-cache.ts).
 */
export function markerAt(events: readonly Event[], m: number): bigint | undefined {
  if (m < 1) return undefined;
  const n = compactedThrough(events[m]!);
  if (n === undefined || !isSummary(events[m - 1]!, events[m]!) || n >= BigInt(m)) return undefined;
  return n;
}

/** The history before `end` bounded at the marker `events[m]`, which compacts through `n`: summary, marker, then records n + 1 on. */
export function historyAt(events: readonly Event[], end: number, m: number, n: bigint): Event[] {
  const out: Event[] = [events[m - 1]!, events[m]!];
  for (let i = Number(n); i < end; i++) if (i !== m - 1 && i !== m) out.push(events[i]!);
  return out;
}
