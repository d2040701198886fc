/**
 * The session page (`#<uid>`, `#<uid>/seq/<n>`): what the session is, its pending approval with
 * context, its usage, a form to run a turn, in-browser chain verification, and its journal as a
 * timeline that follows new records live (follow.ts) while anything runs, from this page or not.
 */
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { ExecState, type Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { api, records } from "./api.js";
import { gatePanel, pausedPanel } from "./approval-panel.js";
import { type Child, fill, h } from "./dom.js";
import { clockTime, computeStateName, count, duration, execStateName, isoTime, shortUid } from "./format.js";
import { feed } from "./follow.js";
import { gateDetails } from "./gates.js";
import { totalTokens, type Timeline } from "./journal-model.js";
import * as notices from "./notices.js";
import { startPolling } from "./poll.js";
import { hrefOf, NO_FILTERS } from "./routes.js";
import { createTurnRunner } from "./run-turn.js";
import { createTimeline } from "./timeline-view.js";
import { createVerifyPanel } from "./verify-panel.js";
import type { View } from "./view.js";

export function mountSession(root: HTMLElement, uid: string, targetSeq?: bigint): View {
  let session: Session | undefined;
  let recs: LogRecord[] = [];
  let timeline: Timeline | undefined;
  let journal: "reading" | "read" | "unreadable" = "reading";
  let stopped = false;
  const stops: Array<() => void> = [];

  const gateBox = h("div", { class: "gate-box" });
  const usageBox = h("div", { class: "usage", "aria-label": "Token usage" });
  const branchName = h("input", { id: "branch-name", autocomplete: "off", placeholder: "optional" });
  const action = (label: string, run: () => Promise<unknown>, opts: { danger?: boolean; aria?: string } = {}) =>
    h("button", { type: "button", class: opts.danger ? "danger" : undefined, "aria-label": opts.aria, onclick: () => void run() }, label);
  const compareLink = h("a", { class: "button", hidden: true }, "Compare with parent");
  const suspendButton = action("Suspend", () => lifecycle("Suspend", () => api().suspend(uid)));
  const cancelButton = action("Cancel turn", () => lifecycle("Cancel", () => api().cancel(uid)));
  // Built once and shown with the session's first answer (renderHead).
  const actions = h(
    "div",
    { class: "actions", role: "group", "aria-label": "Session actions", hidden: true },
    h("a", { class: "button", href: hrefOf({ view: "tree", uid }) }, "Branches"),
    compareLink,
    h("span", { class: "fork-name" }, h("label", { for: "branch-name" }, "New branch name"), branchName),
    action("Fork at head", () => fork(0n), { aria: "Fork at head: a new branch with every record so far" }),
    suspendButton,
    action("Resume", () => lifecycle("Resume", () => api().resume(uid))),
    cancelButton,
    action("Delete", () => remove(), { danger: true }),
  );
  const head = h("div", { class: "session-head" }, actions);
  const tl = createTimeline(uid, (seq) => fork(seq));
  // The running turn's text as it streams in, from whichever client runs it (follow.ts).
  const liveText = h("pre", {});
  const live = h("div", { class: "stream live-turn", hidden: true, "aria-live": "polite" }, h("p", { class: "muted" }, "running turn…"), liveText);
  let liveAfter = -1n;
  const verify = createVerifyPanel(uid, (seq) => tl.reveal(seq, "bad"));
  const runner = createTurnRunner(uid, {
    head: () => recs[recs.length - 1]?.seq ?? 0n,
    onRecord: (r) => merge([r]),
    onSession: (s) => show(s),
    onDone: () => void refresh(),
  });
  fill(
    root,
    head,
    gateBox,
    h("div", { class: "panel-row" }, runner.el, verify.el),
    usageBox,
    h("h2", { class: "section-title" }, "Journal"),
    h("p", { class: "muted times-note", hidden: true }),
    tl.el,
    live,
  );

  async function refresh(): Promise<void> {
    try {
      show(await api().get(uid));
      notices.ok("session");
    } catch (e) {
      notices.fail("session", "Loading the session", e);
    }
  }

  function show(s: Session): void {
    if (stopped) return;
    session = s;
    renderHead(s);
    renderGate(s);
    runner.setBlocked(blockedWhy(s));
    if (timeline) timeline = tl.update(recs, s.execState);
  }

  function merge(incoming: readonly LogRecord[]): void {
    if (stopped || incoming.length === 0) return;
    const bySeq = new Map(recs.map((r) => [r.seq, r]));
    let changed = false;
    for (const r of incoming) {
      if (!bySeq.has(r.seq)) {
        bySeq.set(r.seq, r);
        changed = true;
      }
    }
    if (!changed) return;
    recs = [...bySeq.values()].sort((a, b) => (a.seq < b.seq ? -1 : 1));
    render();
    // New records change the session's state; ask for it rather than guess.
    void refresh();
  }

  function render(): void {
    timeline = tl.update(recs, session?.execState ?? ExecState.EXEC_STATE_UNSPECIFIED);
    verify.noteHead(recs[recs.length - 1]?.seq ?? 0n);
    renderUsage(timeline);
    const note = root.querySelector<HTMLElement>(".times-note")!;
    note.hidden = timeline.timed || recs.length === 0;
    note.textContent = "These records carry no times (they were written before the host stamped Event.ts), so durations are not shown.";
    if (session) renderGate(session);
  }

  function renderHead(s: Session): void {
    const m = s.metadata;
    const title = m?.name || uid;
    document.title = `${title} · agentsessions inspector`;
    const facts: Array<[string, Child]> = [
      ["uid", h("code", {}, uid)],
      ["project", h("a", { href: hrefOf({ view: "sessions", project: m?.project ?? "", filters: NO_FILTERS }) }, m?.project ?? "")],
      ["harness", s.harness || "–"],
      ["model", s.model || "–"],
      ["last seq", String(s.lastSeq)],
      ["created", timeOf(m?.createTime)],
      ["updated", timeOf(m?.updateTime)],
    ];
    if (s.parentUid) {
      facts.push([
        "forked from",
        [h("a", { href: hrefOf({ view: "session", uid: s.parentUid, seq: s.forkSeq }) }, shortUid(s.parentUid)), ` after seq ${s.forkSeq}`],
      ]);
    }
    const labels = Object.entries(s.labels).sort();
    if (labels.length) facts.push(["labels", labels.map(([k, v]) => h("span", { class: "label" }, `${k}=${v}`))]);
    // Everything above the actions is drawn again; the actions stay in place, so the branch-name
    // field keeps its focus and text while records arrive (taking it out of the page would blur it).
    for (const old of Array.from(head.children)) if (old !== actions) old.remove();
    actions.before(
      h(
        "nav",
        { class: "crumbs", "aria-label": "Breadcrumb" },
        h("a", { href: hrefOf({ view: "sessions", project: m?.project ?? "", filters: NO_FILTERS }) }, "Sessions"),
        " › ",
        title,
      ),
      h(
        "div",
        { class: "title-row" },
        h("h1", {}, title),
        h("span", { class: `chip state-${execStateName(s.execState).toLowerCase()}`, title: "exec state" }, execStateName(s.execState)),
        h("span", { class: "chip", title: "compute state" }, computeStateName(s.computeState)),
      ),
      h(
        "dl",
        { class: "facts" },
        facts.map(([k, v]) => h("div", { class: k === "uid" ? "wide" : undefined }, h("dt", {}, k), h("dd", {}, v))),
      ),
    );
    if (s.parentUid) compareLink.setAttribute("href", hrefOf({ view: "compare", uid, other: s.parentUid }));
    compareLink.hidden = !s.parentUid;
    suspendButton.disabled = s.execState === ExecState.EXEC_RUNNING;
    cancelButton.disabled = s.execState !== ExecState.EXEC_RUNNING && s.execState !== ExecState.EXEC_FAILED;
    actions.hidden = false;
  }

  let gateKey = "";
  function renderGate(s: Session): void {
    const current = gateBox.firstElementChild as HTMLElement | null;
    const ref = s.pendingApproval;
    // A box mid-decision (or whose resume failed) stays until it is settled, and a settled one
    // keeps saying what happened until another gate needs the place.
    if (current?.dataset.state === "busy" || current?.dataset.state === "committed") return;
    if (current?.dataset.state === "done" && !ref) return;
    // Until the journal is read the gated call's tool and arguments are unknown: show nothing
    // rather than a box that is about to change under the reader's pointer.
    if (ref && journal === "reading") return;
    const key = ref ? `${ref.executionId}/${ref.toolCallId}/${ref.requestSeq}` : s.execState === ExecState.EXEC_AWAITING ? "paused" : "";
    // A request newer than the records read so far: wait for the feed to bring it.
    if (ref && journal === "read" && !recs.some((r) => r.seq === ref.requestSeq)) return;
    if (key === gateKey) return;
    gateKey = key;
    if (ref) {
      fill(gateBox, gatePanel(uid, gateDetails(ref, recs), { harness: s.harness, onSettled: () => void reload() }));
    } else if (key === "paused") {
      fill(
        gateBox,
        pausedPanel(uid, () => void reload()),
      );
    } else {
      fill(gateBox);
    }
  }

  function renderUsage(t: Timeline): void {
    const turns = t.turns.filter((x) => x.number > 0);
    const first = turns.find((x) => x.startMs !== undefined)?.startMs;
    const last = [...turns].reverse().find((x) => x.endMs !== undefined)?.endMs;
    fill(
      usageBox,
      h("span", {}, `${turns.length} turn${turns.length === 1 ? "" : "s"}`),
      t.usage.reports
        ? h(
            "span",
            {},
            `${count(totalTokens(t.usage))} tokens: ${count(t.usage.input)} in · ${count(t.usage.output)} out` +
              (t.usage.reasoning ? ` · ${count(t.usage.reasoning)} reasoning` : ""),
          )
        : h("span", { class: "muted" }, "no token usage recorded"),
      first !== undefined && last !== undefined ? h("span", {}, `${duration(last - first)} from first to last record`) : null,
    );
  }

  async function reload(): Promise<void> {
    await refresh();
  }

  async function fork(at: bigint): Promise<void> {
    try {
      const name = branchName.value.trim();
      const [child] = await api().fork(uid, { at, count: 1, names: name ? [name] : [] });
      notices.ok("fork");
      if (!child?.metadata) return;
      const childUid = child.metadata.uid;
      notices.info(
        `Forked ${child.metadata.name || shortUid(childUid)} after seq ${child.forkSeq}. `,
        h("a", { href: hrefOf({ view: "tree", uid: childUid }) }, "See it in the tree"),
      );
      location.hash = hrefOf({ view: "session", uid: childUid });
    } catch (e) {
      notices.fail("fork", "Fork", e);
    }
  }

  async function lifecycle(name: string, call: () => Promise<Session>): Promise<void> {
    try {
      show(await call());
      notices.ok(name);
      notices.info(`${name}: done.`);
    } catch (e) {
      notices.fail(name, name, e);
    }
  }

  async function remove(): Promise<void> {
    if (!confirm(`Delete session ${uid}? Its journal is erased; its forks survive.`)) return;
    try {
      await api().delete(uid);
      notices.info(`Deleted ${uid}.`);
      location.hash = hrefOf({ view: "sessions", project: session?.metadata?.project ?? "", filters: NO_FILTERS });
    } catch (e) {
      notices.fail("delete", "Delete", e);
    }
  }

  void (async () => {
    await refresh();
    if (!session) return;
    try {
      const got = await records(uid);
      if (stopped) return;
      recs = got;
      journal = "read";
      render();
      notices.ok("replay");
    } catch (e) {
      journal = "unreadable";
      renderGate(session);
      notices.fail("replay", "Reading the journal", e);
    }
    if (targetSeq !== undefined) tl.reveal(targetSeq);
    if (stopped) return;
    stops.push(
      feed.follow(uid, (recs[recs.length - 1]?.seq ?? 0n) + 1n, {
        onRecords: (rs) => {
          // The committed record carries the text: the streamed copy goes.
          live.hidden = true;
          liveText.textContent = "";
          merge(rs);
        },
        onDelta: (d) => {
          if (d.afterSeq !== liveAfter) liveText.textContent = "";
          liveAfter = d.afterSeq;
          liveText.textContent += d.chunk;
          live.hidden = liveText.textContent === "";
        },
        onError: (e) => notices.fail("follow", "Following the journal", e),
        onOk: () => notices.ok("follow"),
      }),
      // State can change without a record (compute, another tab's decision): look now and then.
      startPolling(refresh, { intervalMs: 3000 }),
    );
  })();

  return {
    unmount() {
      stopped = true;
      runner.stop();
      for (const s of stops) s();
    },
  };
}

function blockedWhy(s: Session): string {
  if (s.execState === ExecState.EXEC_AWAITING) return "The turn waits for an approval decision: decide it above before running another turn.";
  return "";
}

function timeOf(ts: { seconds: bigint; nanos: number } | undefined): Child {
  if (!ts) return "–";
  const ms = Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6);
  return h("time", { datetime: isoTime(ms), title: isoTime(ms) }, clockTime(ms));
}
