/**
 * The decision box for one pending gate, shared by the session page and the approvals inbox: the
 * tool and its arguments (pretty, collapsible), who asked and when, the deadline counting down, a
 * reason, and Approve / Deny. Approve and Deny commit the decision and continue the turn
 * (decide.ts); the box then says "decision committed" and what the resume did, with a retry when
 * it failed. Also the box for a turn that is paused with no decision pending.
 */
import type { Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { argsBlock } from "./record-view.js";
import { countdown } from "./countdown.js";
import { decide, resume } from "./decide.js";
import { type Child, fill, h } from "./dom.js";
import { errorLine } from "./errors.js";
import { clockTime, execStateName, isoTime } from "./format.js";
import type { GateDetails } from "./gates.js";
import { hrefOf } from "./routes.js";
import * as notices from "./notices.js";

export interface GatePanelOptions {
  /** The session's harness, when the gate's own EXECUTION_START was not read. */
  harness?: string;
  /** The session's name or uid, shown in the inbox. */
  title?: Child;
  /** Called once the turn continued (with the resumed session) or the decision failed. */
  onSettled?(session: Session | undefined): void;
}

export function gatePanel(uid: string, gate: GateDetails, o: GatePanelOptions = {}): HTMLElement {
  const reasonId = `reason-${uid}-${gate.toolCallId}`;
  const reason = h("input", { id: reasonId, name: "reason", autocomplete: "off", placeholder: "why (journaled with the decision; required to deny)" });
  const result = h("p", { class: "gate-result", role: "status", "aria-live": "polite" });
  const approve = h("button", { type: "button", class: "primary" }, "Approve and continue");
  const deny = h("button", { type: "button", class: "danger" }, "Deny");
  const buttons = [approve, deny];
  const chip = h("span", { class: "chip state-awaiting" }, "needs approval");
  const deadline = h("dd", {}, gate.deadlineMs !== undefined ? countdown(gate.deadlineMs) : "none: it waits until someone decides");
  // Once the decision is in, the box says which, and the deadline no longer counts down.
  const decided = (seq: bigint, approved: boolean) => {
    chip.textContent = approved ? "approved" : "denied";
    chip.className = `chip ${approved ? "state-completed" : "state-failed"}`;
    fill(deadline, `met: decided at seq ${seq}`);
  };
  // "busy" while deciding, "committed" when the decision is in but the resume failed, "done" after.
  let panel: HTMLElement | undefined;
  const mark = (state: "idle" | "busy" | "committed" | "done") => {
    if (panel) panel.dataset.state = state;
  };

  const settle = (text: Child, cls: string, extra?: Child) => {
    result.className = `gate-result ${cls}`;
    fill(result, text, extra ?? null);
  };
  const retryResume = (seq: bigint, approved: boolean): HTMLButtonElement => {
    const retry = h("button", { type: "button", class: "inline" }, "Retry resume");
    retry.addEventListener("click", async () => {
      retry.disabled = true;
      mark("busy");
      settle(`Decision committed at seq ${seq} (${approved ? "approved" : "denied"}). Resuming the turn…`, "busy");
      const r = await resume(uid);
      if ("session" in r) resumed(seq, approved, r.session);
      else {
        mark("committed");
        settle(`Decision committed at seq ${seq} (${approved ? "approved" : "denied"}); ${errorLine("resume", r.error)}`, "bad", retryResume(seq, approved));
      }
    });
    return retry;
  };
  const resumed = (seq: bigint, approved: boolean, s: Session) => {
    mark("done");
    settle(
      `Decision committed at seq ${seq} (${approved ? "approved" : "denied"}). The turn continued: ${execStateName(s.execState)} at seq ${s.lastSeq}.`,
      "good",
    );
    notices.info(`Decision committed at seq ${seq}; the turn continued.`);
    o.onSettled?.(s);
  };
  const run = async (approved: boolean) => {
    const why = reason.value.trim();
    if (!approved && !why) {
      settle("A denial needs a reason: it is journaled with the decision.", "bad");
      reason.focus();
      return;
    }
    for (const b of buttons) b.disabled = true;
    mark("busy");
    settle(approved ? "Approving…" : "Denying…", "busy");
    const d = await decide(uid, { executionId: gate.executionId, toolCallId: gate.toolCallId, requestSeq: gate.requestSeq }, approved, why);
    if (d.committed) decided(d.seq, d.approved);
    if (!d.committed) {
      mark("idle");
      for (const b of buttons) b.disabled = false;
      settle(errorLine(approved ? "Approve" : "Deny", d.error), "bad");
      return;
    }
    if ("resumed" in d) resumed(d.seq, d.approved, d.resumed);
    else {
      mark("committed");
      settle(
        `Decision committed at seq ${d.seq} (${d.approved ? "approved" : "denied"}); ${errorLine("resume", d.resumeError)}`,
        "bad",
        retryResume(d.seq, d.approved),
      );
    }
  };
  approve.addEventListener("click", () => run(true));
  deny.addEventListener("click", () => run(false));

  const harness = gate.harness || o.harness;
  const asked: Child[] = [
    harness ? `harness ${harness}` : "the harness",
    ` · execution ${gate.executionId}`,
    gate.requestedAtMs !== undefined
      ? [" · ", h("time", { datetime: isoTime(gate.requestedAtMs), title: isoTime(gate.requestedAtMs) }, clockTime(gate.requestedAtMs))]
      : null,
  ];
  panel = h(
    "section",
    { class: "gate", "data-state": "idle", "aria-label": `Approval for ${gate.tool ?? gate.toolCallId}` },
    h(
      "header",
      {},
      o.title ? h("h3", {}, o.title) : null,
      h("p", { class: "gate-tool" }, chip, " ", h("strong", {}, gate.tool ?? "(tool call not found)"), ` call ${gate.toolCallId}`),
    ),
    gate.args !== undefined ? argsBlock("arguments", gate.args, true) : h("p", { class: "muted" }, "The TOOL_CALL record of this gate was not found."),
    h(
      "dl",
      { class: "facts" },
      h("div", {}, h("dt", {}, "asked by"), h("dd", {}, asked)),
      h(
        "div",
        {},
        h("dt", {}, "request"),
        h(
          "dd",
          {},
          h("a", { href: hrefOf({ view: "session", uid, seq: gate.requestSeq }) }, `record #${gate.requestSeq}`),
          gate.reason ? ` · ${gate.reason}` : "",
        ),
      ),
      h("div", {}, h("dt", {}, "deadline"), deadline),
    ),
    h("div", { class: "gate-decide" }, h("label", { for: reasonId }, "Reason"), reason, approve, deny),
    result,
  );
  return panel;
}

/** A turn paused with nothing to decide: a decision committed but not resumed, or a gate a fork inherited. */
export function pausedPanel(uid: string, onSettled: (s: Session | undefined) => void): HTMLElement {
  const result = h("p", { class: "gate-result", role: "status" });
  const button = h("button", { type: "button", class: "primary" }, "Resume turn");
  button.addEventListener("click", async () => {
    button.disabled = true;
    fill(result, "Resuming the turn…");
    const r = await resume(uid);
    button.disabled = false;
    if ("session" in r) {
      fill(result, `The turn continued: ${execStateName(r.session.execState)} at seq ${r.session.lastSeq}.`);
      onSettled(r.session);
    } else {
      fill(result, errorLine("Resume", r.error));
    }
  });
  return h(
    "section",
    { class: "gate paused", "aria-label": "Paused turn" },
    h(
      "p",
      {},
      "This turn is paused and nothing awaits a decision (a decision is committed but the turn has not continued yet, or a fork inherited an open gate).",
    ),
    button,
    result,
  );
}
