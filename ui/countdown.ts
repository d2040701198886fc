/**
 * Live countdowns: any element with class "countdown" and a data-deadline (ms since the epoch)
 * shows the time left, updated once a second by one ticker for the whole page.
 */
import { h } from "./dom.js";
import { duration, isoTime } from "./format.js";

export function countdown(deadlineMs: number): HTMLElement {
  const node = h("time", { class: "countdown", datetime: isoTime(deadlineMs), "data-deadline": String(deadlineMs), title: isoTime(deadlineMs) });
  tick(node, Date.now());
  return node;
}

function tick(node: Element, now: number): void {
  const left = Number(node.getAttribute("data-deadline")) - now;
  node.textContent = left > 0 ? `denied automatically in ${duration(left)}` : `deadline passed ${duration(-left)} ago: the host denies it`;
  node.classList.toggle("urgent", left < 5 * 60_000);
}

export function startCountdowns(): void {
  setInterval(() => {
    const now = Date.now();
    document.querySelectorAll(".countdown[data-deadline]").forEach((n) => tick(n, now));
  }, 1000);
}
