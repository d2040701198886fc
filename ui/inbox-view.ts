/**
 * The approvals inbox (`#/approvals?project=…`): every pending gate of a project, oldest request
 * first, each with its tool, arguments, who asked, deadline and Approve / Deny (approval-panel.ts).
 * ListSessions says which sessions wait (`pending_approval`); Replay of the request and the record
 * before it (the gated TOOL_CALL, written in the same transaction) says what they wait for.
 */
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import type { Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { allSessions, records } from "./api.js";
import { gatePanel } from "./approval-panel.js";
import { fill, h } from "./dom.js";
import { shortUid } from "./format.js";
import { gateDetails } from "./gates.js";
import * as notices from "./notices.js";
import { startPolling } from "./poll.js";
import { hrefOf } from "./routes.js";
import type { View } from "./view.js";

export function mountInbox(root: HTMLElement, project: string): View {
  const list = h("div", { class: "inbox" });
  const status = h("p", { class: "muted", role: "status" }, "Loading…");
  fill(root, h("div", { class: "title-row" }, h("h1", {}, "Approvals"), h("span", { class: "muted" }, `project ${project}`)), status, list);
  // One panel per gate, kept across refreshes so a half-typed reason or a decision's result stays.
  const panels = new Map<string, HTMLElement>();
  const gateRecords = new Map<string, LogRecord[]>();

  const keyOf = (s: Session) => {
    const p = s.pendingApproval!;
    return `${s.metadata?.uid}/${p.executionId}/${p.toolCallId}/${p.requestSeq}`;
  };

  const stop = startPolling(
    async (signal) => {
      const { sessions, truncated } = await allSessions(project);
      const waiting = sessions
        .filter((s) => s.pendingApproval)
        .sort((a, b) => ((a.metadata?.updateTime?.seconds ?? 0n) < (b.metadata?.updateTime?.seconds ?? 0n) ? -1 : 1));
      const keys = new Set(waiting.map(keyOf));
      for (const s of waiting) {
        const key = keyOf(s);
        const uid = s.metadata?.uid ?? "";
        const ref = s.pendingApproval!;
        if (!gateRecords.has(key)) gateRecords.set(key, await records(uid, ref.requestSeq > 1n ? ref.requestSeq - 1n : 1n, ref.requestSeq, signal));
        if (!panels.has(key)) {
          const title = h("a", { href: hrefOf({ view: "session", uid, seq: ref.requestSeq }) }, s.metadata?.name || shortUid(uid));
          panels.set(key, gatePanel(uid, gateDetails(ref, gateRecords.get(key)!), { harness: s.harness, title }));
        }
      }
      // A gate decided elsewhere leaves; one decided here stays until its resume is done.
      for (const [key, panel] of panels) {
        if (!keys.has(key) && panel.dataset.state !== "busy" && panel.dataset.state !== "committed") {
          panels.delete(key);
          gateRecords.delete(key);
        }
      }
      fill(list, [...panels.values()]);
      const n = waiting.length;
      status.textContent =
        n === 0 ? "Nothing awaits a decision in this project." : `${n} tool call${n === 1 ? "" : "s"} await${n === 1 ? "s" : ""} a decision.`;
      if (truncated) status.textContent += " (Only the newest sessions were searched.)";
    },
    { intervalMs: 5000, onError: (e) => notices.fail("inbox", "Loading approvals", e), onOk: () => notices.ok("inbox") },
  );
  return { unmount: stop };
}
