/**
 * How agentctl prints records and sessions for a person (docs/behaviour.md §7.4): records as
 * `seq=N  KIND  role: text`, or `seq=N  KIND  detail` for events without a message; sessions with
 * their states stripped of enum prefixes. `--json` output does not go through here.
 * Used by the exec, replay, get, list, resume and approve/deny commands; tested in test/node/cli/.
 */
import type { Event, LogRecord, Message } from "../proto/gen/agentsessions/v1/common_pb.js";
import { Lifecycle_Kind, ToolResult_Code } from "../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState, type Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { eventKindName, REORDERING_MARKS_CLASS, textOf } from "../proto/messages.js";

/**
 * Text from a session (a model's answer, a tool's name, a session's name) as a terminal may show
 * it: control characters but tab and newline, and the marks that reorder text on screen, are
 * written as visible escapes, so no record can move the cursor, retitle the window, set the
 * clipboard or make an approval read differently than it is.
 */
export function forTerminal(s: string): string {
  return s.replace(UNSAFE_ON_TERMINAL, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16)}`;
  });
}

/** C0 controls but \t and \n, DEL, C1 controls, and the bidirectional marks, embeddings, overrides and isolates. */
const UNSAFE_ON_TERMINAL = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${REORDERING_MARKS_CLASS}]`, "g");

export function formatRecord(r: LogRecord): string {
  const ev = r.event;
  const kind = ev ? eventKindName(ev.kind) : "(no event)";
  const detail = ev ? forTerminal(eventDetail(ev)) : "";
  return `seq=${r.seq}  ${kind}${detail ? "  " + detail : ""}`;
}

/** The part of a record line after the kind; "" when nothing is worth showing. */
export function eventDetail(ev: Event): string {
  const b = ev.body;
  switch (b.case) {
    case "message":
      return messageLine(b.value);
    case "model":
      return `model=${b.value.model}`;
    case "executionStart": {
      const s = b.value;
      const parts = [`harness=${s.harness}`];
      if (s.inputCount !== undefined) parts.push(`inputs=${s.inputCount}`);
      if (s.resumeFromSeq !== 0n) parts.push(`resume_from_seq=${s.resumeFromSeq}`);
      // The config bytes are the caller's secret business: show only that they exist.
      if (s.config.length > 0) parts.push(`config=${s.config.length}B`);
      return parts.join(" ");
    }
    case "end":
      return `state=${b.value.state}` + (b.value.error ? ` error=${b.value.error.code}` : "");
    case "error":
      return `code=${b.value.code} ${b.value.description}`.trimEnd();
    case "tool":
      return `${b.value.tool} id=${b.value.id}`;
    case "result": {
      // The code tells an approval receipt (APPROVAL_DENIED) from an executor failure; the content is not shown.
      const code = b.value.code === ToolResult_Code.CODE_UNSPECIFIED ? "" : ` code=${ToolResult_Code[b.value.code] ?? b.value.code}`;
      return `id=${b.value.id}${b.value.isError ? " error" : ""}${code}`;
    }
    case "approval":
      return `tool_call_id=${b.value.toolCallId}`;
    case "approvalResult":
      return `tool_call_id=${b.value.toolCallId} ${b.value.approved ? "approved" : "denied"}`;
    case "usage":
      return "";
    case "lifecycle": {
      // The detail is the host's own text (FORK "parent@N", CANCEL reason), never user content.
      const l = b.value;
      const parts = [(Lifecycle_Kind[l.kind] ?? String(l.kind)).replace(/^LIFECYCLE_/, "")];
      if (l.detail) parts.push(l.detail);
      if (l.snapshotLocal) parts.push(`snapshot=${l.snapshotLocal}`);
      return parts.join(" ");
    }
    case "parked":
      return `tool_call_id=${b.value.toolCallId} request_seq=${b.value.requestSeq}`;
    default:
      return "";
  }
}

/** `role: text`, or the part kinds when the message carries no text. */
function messageLine(m: Message): string {
  const text = textOf(m);
  if (text !== "" || m.parts.length === 0) return `${m.role}: ${text}`;
  return `${m.role}: [${m.parts.map((p) => p.part.case ?? "empty").join(", ")}]`;
}

export function execStateName(s: ExecState): string {
  return (ExecState[s] ?? String(s)).replace(/^EXEC_(STATE_)?/, "");
}

export function computeStateName(s: ComputeState): string {
  return (ComputeState[s] ?? String(s)).replace(/^COMPUTE_(STATE_)?/, "");
}

/** One line per session, as `list` prints it. */
export function formatSessionLine(s: Session): string {
  const m = s.metadata;
  return `${m?.uid ?? ""}  last_seq=${s.lastSeq}  compute=${computeStateName(s.computeState)}  harness=${forTerminal(s.harness)}  name=${forTerminal(m?.name ?? "")}`;
}

/** The `get` summary: one `key  value` line per field. */
export function formatSessionSummary(s: Session): string {
  const m = s.metadata;
  const rows: [string, string][] = [
    ["uid", m?.uid ?? ""],
    ["project", m?.project ?? ""],
    ["name", m?.name ?? ""],
    ["harness", s.harness],
    ["last_seq", String(s.lastSeq)],
    ["exec_state", execStateName(s.execState)],
    ["compute_state", computeStateName(s.computeState)],
  ];
  if (s.parentUid) rows.push(["parent_uid", s.parentUid], ["fork_seq", String(s.forkSeq)]);
  const p = s.pendingApproval;
  if (p) rows.push(["pending_approval", `execution=${p.executionId} tool_call=${p.toolCallId} request_seq=${p.requestSeq}`]);
  // Values start in column 16; a longer key (pending_approval) keeps a two-space gap instead.
  return rows.map(([k, v]) => `${k.padEnd(13)}  ${forTerminal(v)}`.trimEnd()).join("\n") + "\n";
}

/** What `resume` (and `approve`/`deny` after their Resume) print: `session <uid> resume compute=… last_seq=N`. */
export function formatResumeLine(s: Session, uid: string): string {
  return `session ${s.metadata?.uid || uid} resume compute=${computeStateName(s.computeState)} last_seq=${s.lastSeq}`;
}

/**
 * The line `exec` prints for a final session frame that parks the turn (§4.5 item 11), naming the
 * command that decides it; "" when the frame has no pending approval.
 */
export function formatParkedLine(s: Session): string {
  const p = s.pendingApproval;
  if (!p) return "";
  return `parked: awaiting approval of tool_call=${forTerminal(p.toolCallId)} request_seq=${p.requestSeq} (agentctl approve ${s.metadata?.uid ?? ""})`;
}
