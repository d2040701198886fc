/**
 * The page's two message areas: a status line for what just happened (role=status) and an alert
 * for what failed (role=alert). Each failure belongs to a source ("list", "poll", "approve", …) and
 * goes away when that source next succeeds, when dismissed, or when the view changes, so an error
 * never outlives its cause. Messages are written for the browser (errors.ts), never CLI advice.
 */
import { byId, type Child, fill, h } from "./dom.js";
import { errorLine } from "./errors.js";

interface Failure {
  line: string;
  retry?: { label: string; run: () => void };
}

const failures = new Map<string, Failure>();

export function info(...text: Child[]): void {
  fill(byId("status"), ...text);
}

/** Shows `action failed: code: message advice`, replacing this source's previous failure. */
export function fail(source: string, action: string, e: unknown, retry?: Failure["retry"]): void {
  failures.set(source, { line: errorLine(action, e), retry });
  render();
}

/** The source succeeded: its failure, if any, is gone. */
export function ok(source: string): void {
  if (failures.delete(source)) render();
}

/** A new view: failures of the old one no longer apply. */
export function clearAll(): void {
  failures.clear();
  info();
  render();
}

function render(): void {
  const box = byId("alert");
  box.hidden = failures.size === 0;
  fill(
    byId("alert-list"),
    [...failures.entries()].map(([source, f]) =>
      h(
        "li",
        { class: "alert-item", "data-source": source },
        f.line,
        f.retry && h("button", { type: "button", class: "inline", onclick: () => f.retry?.run() }, f.retry.label),
        h("button", { type: "button", class: "icon", "aria-label": "Dismiss this message", title: "Dismiss", onclick: () => ok(source) }, "×"),
      ),
    ),
  );
}
