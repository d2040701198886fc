/**
 * Checks one step's `expect` block against its result and returns what did not hold (empty = pass).
 * Every check reports the path, what was expected and what came back, so a FAIL line is enough to
 * start debugging without re-running. Internal to conformance/ (@internal).
 */
import { toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { LogRecordSchema, type LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { verifyChain } from "../proto/verify.js";
import type { Expect, SameRecords } from "./case.js";
import type { CallResult } from "./rpc.js";
import { getPath, jsonEqual, show } from "./values.js";

/** Records kept by `as:` names, in the order they streamed (repeats concatenated). */
export type NamedRecords = Map<string, LogRecord[]>;

export function check(e: Expect, r: CallResult, named: NamedRecords): string[] {
  const codeFail = checkCode(e, r);
  if (codeFail) return [codeFail];
  const out = checkView(e, r.view);
  if (e.chainVerifies) out.push(...checkChain(r.records));
  if (e.sameRecords !== undefined) out.push(...checkSameRecords(e.sameRecords, r.records, named));
  return out;
}

function checkCode(e: Expect, r: CallResult): string | undefined {
  if (e.code === undefined) {
    return r.error ? `unexpected error ${codeName(r.error.code)}: ${r.error.rawMessage}` : undefined;
  }
  if (!r.error) return `expected error ${e.code}, but the call succeeded`;
  if (norm(codeName(r.error.code)) !== norm(e.code)) {
    return `expected error ${e.code}, got ${codeName(r.error.code)}: ${r.error.rawMessage}`;
  }
  if (e.message !== undefined && !r.error.rawMessage.toLowerCase().includes(e.message.toLowerCase())) {
    return `error message ${show(r.error.rawMessage)} does not contain ${show(e.message)}`;
  }
  return undefined;
}

/** The checks that read only the JSON view; `every` re-enters here for each element. */
function checkView(e: Expect, view: unknown): string[] {
  const out: string[] = [];
  for (const [p, want] of Object.entries(e.equal ?? {})) {
    const got = getPath(view, p);
    if (!jsonEqual(got, want)) out.push(`${p}: expected ${show(want)}, got ${show(got)}`);
  }
  for (const [p, re] of Object.entries(e.match ?? {})) {
    const got = getPath(view, p);
    if (typeof got !== "string" || !new RegExp(re).test(got)) out.push(`${p}: ${show(got)} does not match /${re}/`);
  }
  // Present in proto3-JSON = set: a non-default implicit field, or an explicit-presence field.
  for (const p of e.exists ?? []) if (getPath(view, p) === undefined) out.push(`${p}: expected present, was absent`);
  for (const p of e.absent ?? []) {
    const got = getPath(view, p);
    if (got !== undefined) out.push(`${p}: expected absent, got ${show(got)}`);
  }
  for (const [p, n] of Object.entries(e.length ?? {})) {
    const got = listAt(view, p);
    if (got.length !== n) out.push(`${p}: expected ${n} items, got ${got.length}: ${show(got)}`);
  }
  for (const [p, want] of Object.entries(e.contains ?? {})) {
    if (!listAt(view, p).some((x) => jsonEqual(x, want))) out.push(`${p}: does not contain ${show(want)}`);
  }
  for (const p of e.distinct ?? []) {
    const list = listAt(view, p).map((x) => show(x));
    const dup = list.find((x, i) => list.indexOf(x) !== i);
    if (dup !== undefined) out.push(`${p}: ${dup} appears more than once`);
  }
  for (const [p, want] of Object.entries(e.sameSet ?? {})) {
    if (!Array.isArray(want)) throw new Error(`sameSet ${p}: expected a list, got ${show(want)}`);
    const got = listAt(view, p);
    const key = (l: unknown[]) => l.map((x) => show(x)).sort();
    if (!jsonEqual(key(got), key(want))) out.push(`${p}: expected the same members as ${show(want)}, got ${show(got)}`);
  }
  for (const [p, sub] of Object.entries(e.every ?? {})) {
    listAt(view, p).forEach((el, i) => out.push(...checkView(sub, el).map((f) => `${p}.${i}.${f}`)));
  }
  if (e.sessionOrder !== undefined) out.push(...checkSessionOrder(e.sessionOrder, view));
  return out;
}

/** docs/behaviour.md §4.3: create_time descending, then uid ascending (a total order). */
function checkSessionOrder(p: string, view: unknown): string[] {
  const rows = listAt(view, p).map((s) => ({
    t: timestampNanos(getPath(s, "metadata.createTime")),
    uid: String(getPath(s, "metadata.uid") ?? ""),
  }));
  for (let i = 1; i < rows.length; i++) {
    const a = rows[i - 1]!;
    const b = rows[i]!;
    if (a.t < b.t || (a.t === b.t && a.uid >= b.uid)) {
      return [`${p}: ${b.uid} at ${i} should come before ${a.uid} (create_time desc, uid asc)`];
    }
  }
  return [];
}

function checkChain(records: LogRecord[]): string[] {
  if (records.length === 0) return ["chainVerifies: no records to verify"];
  if (records[0]!.seq !== 1n) return [`chainVerifies: needs the records from seq 1, these start at ${records[0]!.seq}`];
  const report = verifyChain(records.map((r) => ({ seq: r.seq, prevHash: r.prevHash, hash: r.contentHash, event: r.event! })));
  return report.ok ? [] : [`chainVerifies: seq ${report.firstBadSeq}: ${report.reason}`];
}

/** Byte-for-byte: each record's binary encoding equals the other step's record at the same position. */
function checkSameRecords(spec: SameRecords, got: LogRecord[], named: NamedRecords): string[] {
  const s = typeof spec === "string" || Array.isArray(spec) ? { steps: spec } : spec;
  const names = Array.isArray(s.steps) ? s.steps : [s.steps];
  const from = BigInt(s.fromSeq ?? 0);
  const to = s.toSeq === undefined ? undefined : BigInt(s.toSeq);
  const want: LogRecord[] = [];
  for (const n of names) {
    const rs = named.get(n);
    if (!rs) return [`sameRecords: no step named ${n}`];
    want.push(...rs.filter((r) => r.seq >= from && (to === undefined || r.seq <= to)));
  }
  if (got.length !== want.length) return [`sameRecords: expected ${want.length} records like ${names.join("+")}, got ${got.length}`];
  for (let i = 0; i < got.length; i++) {
    const a = toBinary(LogRecordSchema, got[i]!);
    const b = toBinary(LogRecordSchema, want[i]!);
    if (Buffer.compare(a, b) !== 0) return [`sameRecords: record seq ${got[i]!.seq} differs from ${names.join("+")}'s seq ${want[i]!.seq}`];
  }
  return [];
}

function listAt(view: unknown, p: string): unknown[] {
  const v = getPath(view, p);
  if (Array.isArray(v)) return v;
  // A repeated field with no elements is omitted from proto3-JSON.
  if (v === undefined) return [];
  throw new Error(`${p} is not a list: ${show(v)}`);
}

/** RFC 3339 (as proto3-JSON writes a Timestamp) to unix nanoseconds, so sub-ms order is kept. */
function timestampNanos(v: unknown): bigint {
  const m = /^(.*?)(?:\.(\d{1,9}))?Z$/.exec(String(v ?? ""));
  const ms = m ? Date.parse(`${m[1]}Z`) : NaN;
  if (!m || Number.isNaN(ms)) return -1n;
  return BigInt(ms) * 1_000_000n + BigInt((m[2] ?? "").padEnd(9, "0"));
}

/** `DeadlineExceeded` → `deadline_exceeded`, the Connect wire name. */
export function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

function norm(code: string): string {
  return code.toLowerCase().replace(/_/g, "");
}
