/**
 * One journal record on screen: its seq, kind, time, a one-line summary, the details a person
 * needs for its kind (tool arguments pretty and collapsible, receipts, decisions, error codes in
 * words, tokens), and per-record actions: a link to it, "fork here", and the raw JSON. Used by the
 * timeline and comparison views.
 */
import { type JsonValue, toJson } from "@bufbuild/protobuf";
import {
  type Event,
  Lifecycle_Kind,
  LogRecordSchema,
  type LogRecord,
  Mediation,
  type Message,
  type Part,
  ToolResult_Code,
} from "../proto/gen/agentsessions/v1/common_pb.js";
import { textOf } from "../proto/messages.js";
import { BLOB_REF_KEY } from "../proto/blob-ref.js";
import { blobsBlock, bytesText } from "./blob-view.js";
import { type Child, h } from "./dom.js";
import { codeInWords } from "./errors.js";
import { clip, clockTime, count, duration, isoTime, jsonLine, kindName, prettyJson, shortHash } from "./format.js";
import type { RecordTiming } from "./journal-model.js";
import { hrefOf } from "./routes.js";

export interface RecordContext {
  uid: string;
  timing: ReadonlyMap<bigint, RecordTiming>;
  /** When set, the record offers "fork here". */
  onFork?: (seq: bigint) => void;
  /** Times are shown relative to this (the turn's first recorded time). */
  originMs?: number;
  /** Whether the journal has times at all; without any, no time column is drawn. */
  timed?: boolean;
}

export function recordItem(rec: LogRecord, ctx: RecordContext): HTMLLIElement {
  const ev = rec.event;
  const kind = ev ? kindName(ev.kind) : "UNSPECIFIED";
  const t = ctx.timing.get(rec.seq) ?? {};
  const seq = rec.seq.toString();
  const raw = h("pre", { class: "raw", hidden: true }, JSON.stringify(toJson(LogRecordSchema, rec), null, 2));
  const rawToggle = h("button", { type: "button", class: "small", "aria-expanded": "false", "aria-label": `Raw JSON of record ${seq}` }, "JSON");
  rawToggle.addEventListener("click", () => {
    raw.hidden = !raw.hidden;
    rawToggle.setAttribute("aria-expanded", String(!raw.hidden));
  });
  return h(
    "li",
    { class: `rec kind-${kind.toLowerCase()}`, id: `rec-${seq}`, "data-seq": seq, "data-kind": kind },
    h(
      "div",
      { class: "rec-head" },
      h("a", { class: "seq", href: hrefOf({ view: "session", uid: ctx.uid, seq: rec.seq }), title: `Link to record ${seq}` }, "#" + seq),
      h("span", { class: "kind" }, kind),
      ctx.timed && timeCell(t, ctx.originMs),
      h("span", { class: "summary" }, ev ? clip(summary(ev), 200) : ""),
      t.tookMs !== undefined && h("span", { class: "took", title: "how long this step took" }, "took " + duration(t.tookMs)),
      t.usage && h("span", { class: "tokens", title: "tokens this model call used" }, `${count(t.usage.input)} in · ${count(t.usage.output)} out`),
      h("span", { class: "hash mono", title: `content_hash ${rec.contentHash}` }, shortHash(rec.contentHash)),
      h(
        "span",
        { class: "rec-actions" },
        ctx.onFork &&
          h(
            "button",
            { type: "button", class: "small", "aria-label": `Fork here: a new branch with records 1 to ${seq}`, onclick: () => ctx.onFork?.(rec.seq) },
            "Fork here",
          ),
        rawToggle,
      ),
    ),
    ev && detail(ev),
    ev && blobsBlock(ev, ctx.uid),
    raw,
  );
}

function timeCell(t: RecordTiming, originMs: number | undefined): Child {
  if (t.atMs === undefined) return h("span", { class: "when none", title: "this record carries no time" }, "–");
  const since = originMs !== undefined && t.atMs !== originMs ? "+" + duration(t.atMs - originMs) : clockTime(t.atMs);
  const title = isoTime(t.atMs) + (t.sincePrevMs !== undefined ? ` (${duration(t.sincePrevMs)} after the record before)` : "");
  return h("time", { class: "when", datetime: isoTime(t.atMs), title }, since);
}

function partText(p: Part): string {
  switch (p.part.case) {
    case "text":
      return p.part.value.text;
    case "toolCall":
      return `[calls ${p.part.value.tool} ${jsonLine(p.part.value.args, 60)}]`;
    case "toolResult":
      return `[result of ${p.part.value.id}]`;
    case "file":
      return `[file ${p.part.value.name || p.part.value.mime}]`;
    case "data": {
      const ref = p.part.value.data?.[BLOB_REF_KEY] as { bytes?: string } | undefined;
      return ref ? `[text stored as a blob, ${bytesText(Number(ref.bytes ?? 0))}]` : "[data]";
    }
    case "reasoning":
      return "[reasoning]";
    default:
      return "";
  }
}

function messageLine(m: Message): string {
  return `${m.role || "?"}: ${m.parts.map(partText).join(" ")}`;
}

const MEDIATION_WORDS: Record<number, string> = {
  [Mediation.IN_HARNESS_REPORTED]: "run by the harness",
  [Mediation.CONTROLLER_MEDIATED]: "run by the host",
  [Mediation.REQUIRES_APPROVAL]: "needs approval",
};

const LIFECYCLE_WORDS: Record<number, string> = {
  [Lifecycle_Kind.LIFECYCLE_SUSPEND]: "suspended (checkpointed cold)",
  [Lifecycle_Kind.LIFECYCLE_RESUME]: "resumed",
  [Lifecycle_Kind.LIFECYCLE_FORK]: "forked",
  [Lifecycle_Kind.LIFECYCLE_BASELINE]: "baseline",
  [Lifecycle_Kind.LIFECYCLE_CANCEL]: "canceled",
};

/** The one-line summary of an event. */
export function summary(ev: Event): string {
  const b = ev.body;
  switch (b.case) {
    case "message":
      return messageLine(b.value);
    case "model":
      return `model ${b.value.model || "?"}`;
    case "tool":
      return `${b.value.tool} ${jsonLine(b.value.args, 80)} · ${MEDIATION_WORDS[b.value.mediation] ?? "unspecified tier"}`;
    case "result": {
      const r = b.value;
      if (!r.isError) return `${r.id}: ok ${clip(r.content.map(partText).join(" "), 80)}`;
      return `${r.id}: error ${r.code ? ToolResult_Code[r.code] : ""} ${r.error}`;
    }
    case "approval":
      return `approval requested for ${b.value.toolCallId}`;
    case "approvalResult": {
      const who = ev.actor?.principal ? ` by ${ev.actor.principal}` : "";
      return `${b.value.approved ? "approved" : "denied"} ${b.value.toolCallId}${who}${b.value.reason ? ": " + b.value.reason : ""}`;
    }
    case "usage":
      return (
        `${b.value.model || "model"}: ${count(b.value.inputTokens)} in · ${count(b.value.outputTokens)} out` +
        (b.value.reasoningTokens ? ` · ${count(b.value.reasoningTokens)} reasoning` : "")
      );
    case "lifecycle":
      return (LIFECYCLE_WORDS[b.value.kind] ?? "lifecycle") + (b.value.detail ? ` ${b.value.detail}` : "");
    case "end":
      return b.value.state + (b.value.error?.description ? `: ${b.value.error.description}` : "");
    case "error":
      return b.value.description;
    case "executionStart": {
      const s = b.value;
      const inputs = s.inputCount === undefined ? "" : ` · ${s.inputCount} input${s.inputCount === 1n ? "" : "s"}`;
      return `${s.harness || "harness"}${s.harnessVersion ? " v" + s.harnessVersion : ""}${inputs}${s.resumeFromSeq ? ` · resumes from ${s.resumeFromSeq}` : ""}`;
    }
    default:
      return "";
  }
}

/** Details worth a second line, by kind. */
function detail(ev: Event): Child {
  const b = ev.body;
  switch (b.case) {
    case "message": {
      const calls = b.value.parts.flatMap((p) => (p.part.case === "toolCall" ? [p.part.value] : []));
      const text = textOf(b.value);
      if (calls.length === 0 && text.length <= 200) return null;
      return h(
        "div",
        { class: "rec-body" },
        text && h("p", { class: "text" }, text),
        calls.map((c) => argsBlock(`${c.tool} (${c.id})`, c.args)),
      );
    }
    case "tool":
      return h(
        "div",
        { class: "rec-body" },
        argsBlock(`arguments of ${b.value.tool}`, b.value.args),
        h("p", { class: "muted" }, `call ${b.value.id} · key ${b.value.idempotencyKey}`),
      );
    case "result": {
      const r = b.value;
      return h(
        "div",
        { class: "rec-body" },
        r.content.length > 0 && h("p", { class: "text" }, r.content.map(partText).join(" ")),
        r.output && argsBlock("output", r.output),
        r.approvalRequestSeq ? h("p", { class: "muted" }, `gate: request #${r.approvalRequestSeq}, decision #${r.approvalDecisionSeq}`) : null,
      );
    }
    case "approval":
      return b.value.reason ? h("div", { class: "rec-body" }, h("p", { class: "text" }, b.value.reason)) : null;
    case "error":
      return h("div", { class: "rec-body" }, h("p", { class: "code-words" }, codeInWords(b.value.code)));
    case "end":
      return b.value.error?.code ? h("div", { class: "rec-body" }, h("p", { class: "code-words" }, codeInWords(b.value.error.code))) : null;
    case "model":
      return Object.keys(b.value.params).length > 0 ? h("div", { class: "rec-body" }, h("p", { class: "muted" }, `params ${jsonLine(b.value.params)}`)) : null;
    default:
      return null;
  }
}

/** Arguments (or an output) one line when collapsed, pretty when open. */
export function argsBlock(label: string, value: JsonValue | undefined, open = false): HTMLDetailsElement {
  return h("details", { class: "args", open }, h("summary", {}, `${label}: `, h("code", {}, jsonLine(value, 90))), h("pre", {}, prettyJson(value)));
}
