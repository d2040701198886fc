/**
 * The session's journal as a timeline: one collapsible group per turn (input → output, state,
 * model and tool calls, tokens, duration, the gap since the turn before), lifecycle markers
 * between them, and every record inside (record-view.ts). Updates are keyed by turn, so records
 * arriving live re-render only the turn they belong to and keep what the reader opened or closed.
 */
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { ExecState } from "../proto/gen/agentsessions/v1/session_pb.js";
import { h } from "./dom.js";
import { clip, clockTime, count, duration, isoTime } from "./format.js";
import { buildTimeline, type Timeline, totalTokens, type Turn } from "./journal-model.js";
import { recordItem } from "./record-view.js";

export interface TimelineView {
  readonly el: HTMLElement;
  /** Renders the journal (all records so far, in seq order) for a session in `execState`. */
  update(records: readonly LogRecord[], execState: ExecState): Timeline;
  /** Opens the record's turn, scrolls to it and marks it (a deep link, or a broken record). */
  reveal(seq: bigint, mark?: "target" | "bad"): void;
}

export function createTimeline(uid: string, onFork: (seq: bigint) => void): TimelineView {
  const el = h("div", { class: "timeline", "aria-label": "Journal timeline" });
  const groups = new Map<string, { node: HTMLElement; sig: string }>();
  const opened = new Map<string, boolean>();
  let last: Timeline | undefined;

  const render = (t: Turn, prev: Turn | undefined, shown: string, timeline: Timeline): HTMLElement => {
    const ctx = { uid, timing: timeline.timing, onFork, originMs: t.startMs, timed: timeline.timed };
    const items = h(
      "ol",
      { class: "records" },
      t.records.map((r) => recordItem(r, ctx)),
    );
    if (t.number === 0) return h("div", { class: "marker", "data-key": t.key }, items);
    const details = h("details", { open: opened.get(t.key) ?? defaultOpen(t, timeline) }, h("summary", {}, turnHeading(t, prev, shown)), items);
    details.addEventListener("toggle", () => opened.set(t.key, details.open));
    return h("section", { class: `turn state-${shown}`, "data-key": t.key, "aria-label": `Turn ${t.number}` }, details);
  };

  return {
    el,
    update(records, execState) {
      const timeline = buildTimeline(records);
      last = timeline;
      const nodes: HTMLElement[] = [];
      let prev: Turn | undefined;
      for (const t of timeline.turns) {
        const shown = shownState(t, t === lastTurn(timeline) ? execState : undefined);
        const sig = `${t.lastSeq}:${t.records.length}:${shown}:${prev?.endMs ?? ""}:${timeline.timed}`;
        let g = groups.get(t.key);
        if (!g || g.sig !== sig) {
          g = { node: render(t, prev, shown, timeline), sig };
          groups.set(t.key, g);
        }
        nodes.push(g.node);
        if (t.number > 0) prev = t;
      }
      el.replaceChildren(...nodes);
      if (nodes.length === 0) el.append(h("p", { class: "empty" }, "No records yet: run a turn."));
      return timeline;
    },
    reveal(seq, mark = "target") {
      const t = last?.turns.find((x) => x.records.some((r) => r.seq === seq));
      if (t) {
        opened.set(t.key, true);
        const details = groups.get(t.key)?.node.querySelector("details");
        if (details) details.open = true;
      }
      const node = el.querySelector<HTMLElement>(`#rec-${seq.toString()}`);
      if (!node) return;
      el.querySelectorAll(`.rec.${mark}`).forEach((n) => n.classList.remove(mark));
      node.classList.add(mark);
      node.scrollIntoView({ block: "center" });
    },
  };
}

function lastTurn(t: Timeline): Turn | undefined {
  return [...t.turns].reverse().find((x) => x.number > 0);
}

/** The state a reader should see: an open last turn is running or was interrupted. */
function shownState(t: Turn, execState: ExecState | undefined): string {
  if (t.state !== "open") return t.state;
  if (execState === ExecState.EXEC_RUNNING) return "running";
  return execState === undefined ? "unfinished" : "interrupted";
}

function defaultOpen(t: Turn, timeline: Timeline): boolean {
  const turns = timeline.turns.filter((x) => x.number > 0);
  return t.state !== "completed" || turns.indexOf(t) >= turns.length - 2;
}

function turnHeading(t: Turn, prev: Turn | undefined, shown: string): HTMLElement[] {
  const facts: string[] = [`#${t.firstSeq}–#${t.lastSeq}`];
  if (t.modelCalls) facts.push(`${t.modelCalls} model call${t.modelCalls > 1 ? "s" : ""}`);
  if (t.toolCalls) facts.push(`${t.toolCalls} tool call${t.toolCalls > 1 ? "s" : ""}`);
  if (t.usage.reports) facts.push(`${count(totalTokens(t.usage))} tokens`);
  if (t.startMs !== undefined && t.endMs !== undefined) facts.push(duration(t.endMs - t.startMs));
  if (t.startMs !== undefined && prev?.endMs !== undefined) facts.push(`${duration(t.startMs - prev.endMs)} after turn ${prev.number}`);
  const io = [t.input && `“${clip(t.input, 80)}”`, t.output && `“${clip(t.output, 80)}”`].filter(Boolean).join(" → ");
  return [
    h("span", { class: "turn-no" }, `Turn ${t.number}`),
    h("span", { class: `chip state-${shown}` }, shown),
    t.startMs !== undefined ? h("time", { class: "turn-time", datetime: isoTime(t.startMs), title: isoTime(t.startMs) }, clockTime(t.startMs)) : h("span", {}),
    h("span", { class: "turn-io" }, io || (t.harness ? `harness ${t.harness}` : "")),
    h("span", { class: "turn-meta" }, facts.join(" · ")),
  ];
}
