/**
 * How the inspector writes times, durations, token counts, enum names and JSON. Pure; used by the
 * views and tested through test/node/ui/journal-model.test.ts.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { type Timestamp, timestampMs } from "@bufbuild/protobuf/wkt";
import { EventKind } from "../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState } from "../proto/gen/agentsessions/v1/session_pb.js";
import { REORDERING_MARKS_CLASS } from "../proto/messages.js";

/** Milliseconds since the epoch of a protobuf Timestamp; undefined when unset (old journals). */
export function msOf(ts: Timestamp | undefined): number | undefined {
  return ts ? timestampMs(ts) : undefined;
}

/** "12:03:04" today, else "2026-11-30 12:03:04" (local time). */
export function clockTime(ms: number, now = Date.now()): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (new Date(now).toDateString() === d.toDateString()) return time;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

/** An absolute time for a title attribute: ISO 8601 with milliseconds. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** 850 ms, 4.2 s, 3 m 05 s, 2 h 04 m, 3 d 2 h. */
export function duration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)} ms`;
  if (abs < 60_000) return `${(abs / 1000).toFixed(abs < 10_000 ? 1 : 0)} s`;
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, "0")} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} m`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** "in 59 m 58 s" or "3.0 s ago". */
export function relative(targetMs: number, now = Date.now()): string {
  const d = targetMs - now;
  return d >= 0 ? `in ${duration(d)}` : `${duration(d)} ago`;
}

/** 1234567n -> "1,234,567" (bigint-safe). */
export function count(n: bigint | number): string {
  return BigInt(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

export function kindName(kind: EventKind): string {
  return (EventKind[kind] ?? String(kind)).replace(/^EVENT_/, "");
}

export function execStateName(s: ExecState): string {
  return s === ExecState.EXEC_STATE_UNSPECIFIED ? "UNKNOWN" : (ExecState[s] ?? String(s)).replace(/^EXEC_/, "");
}

export function computeStateName(s: ComputeState): string {
  return s === ComputeState.COMPUTE_STATE_UNSPECIFIED ? "UNKNOWN" : (ComputeState[s] ?? String(s)).replace(/^COMPUTE_/, "");
}

/** Pretty JSON for display (2-space indent). */
export function prettyJson(value: JsonValue | undefined): string {
  return withVisibleMarks(JSON.stringify(value ?? null, null, 2));
}

/** One line of JSON, clipped: the collapsed form of arguments. */
export function jsonLine(value: JsonValue | undefined, max = 120): string {
  return clip(withVisibleMarks(JSON.stringify(value ?? {})), max);
}

/**
 * JSON text with the marks that reorder text on screen (bidirectional embeddings, overrides,
 * isolates, and the implicit direction marks) written as \u escapes, still valid JSON: a tool's
 * arguments shown for an approval read as they are, not as a right-to-left override makes them
 * look. JSON.stringify already escapes the control characters.
 */
function withVisibleMarks(json: string): string {
  return json.replace(REORDERING_MARKS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

const REORDERING_MARKS = new RegExp(`[${REORDERING_MARKS_CLASS}]`, "g");

export function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

export function shortUid(uid: string): string {
  return uid.replace(/^sess-/, "").slice(0, 8);
}

export function shortHash(hash: string): string {
  return hash.slice(0, 12);
}
