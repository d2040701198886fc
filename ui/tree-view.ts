/**
 * The fork tree of a session (`#<uid>/tree`): its root ancestor and every descendant at any depth,
 * each edge labelled with the seq the branch starts after, each node with its state, head and
 * token usage (in all, and since its fork), and a way to compare any two branches.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { allSessions, api, records } from "./api.js";
import { type BranchNode, branchNodes, branchTree } from "./branches.js";
import { fill, h } from "./dom.js";
import { count, execStateName, shortUid } from "./format.js";
import { totalTokens, usageOf } from "./journal-model.js";
import * as notices from "./notices.js";
import { hrefOf } from "./routes.js";
import type { View } from "./view.js";

export function mountTree(root: HTMLElement, uid: string): View {
  let stopped = false;
  const body = h("div", { class: "tree-box" }, h("p", { class: "muted" }, "Loading the fork tree…"));
  const picked: string[] = [];
  const compare = h("a", { class: "button primary disabled", href: "#", "aria-disabled": "true" }, "Compare the two selected");
  const refresh = h("button", { type: "button", onclick: () => void load() }, "Refresh");
  fill(
    root,
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: hrefOf({ view: "session", uid }) }, shortUid(uid)), " › branches"),
    h("div", { class: "title-row" }, h("h1", {}, "Branches"), refresh, compare),
    h("p", { class: "muted" }, "Every fork of this session's family. Tick two branches to compare them from their common prefix."),
    body,
  );

  const syncCompare = () => {
    const ready = picked.length === 2;
    compare.classList.toggle("disabled", !ready);
    compare.setAttribute("aria-disabled", String(!ready));
    compare.setAttribute("href", ready ? hrefOf({ view: "compare", uid: picked[0]!, other: picked[1]! }) : "#");
  };
  compare.addEventListener("click", (e) => {
    if (picked.length !== 2) e.preventDefault();
  });

  async function rootOf(s: Session): Promise<{ root: Session; lost?: string }> {
    let cur = s;
    for (let i = 0; i < 256 && cur.parentUid; i++) {
      try {
        cur = await api().get(cur.parentUid);
      } catch (e) {
        if (ConnectError.from(e).code === Code.NotFound) return { root: cur, lost: cur.parentUid };
        throw e;
      }
    }
    return { root: cur };
  }

  async function load(): Promise<void> {
    try {
      const me = await api().get(uid);
      const { root: top, lost } = await rootOf(me);
      const { sessions, truncated } = await allSessions(me.metadata?.project ?? "");
      const tree = branchTree(sessions, top.metadata?.uid ?? uid);
      if (stopped) return;
      if (!tree) {
        fill(body, h("p", {}, "This session's family could not be read."));
        return;
      }
      picked.length = 0;
      syncCompare();
      fill(
        body,
        lost ? h("p", { class: "muted" }, `The oldest ancestor still here was forked from ${lost}, which was deleted.`) : null,
        truncated ? h("p", { class: "muted" }, "The project has more sessions than were read: some branches may be missing.") : null,
        h("ul", { class: "tree" }, node(tree, undefined)),
      );
      notices.ok("tree");
      void usage(branchNodes(tree));
    } catch (e) {
      notices.fail("tree", "Loading the fork tree", e);
    }
  }

  function node(n: BranchNode, parent: BranchNode | undefined): HTMLLIElement {
    const s = n.session;
    const state = execStateName(s.execState);
    const box = h("input", { type: "checkbox", id: `pick-${n.uid}`, "aria-label": `Select ${s.metadata?.name || n.uid} for comparison` });
    box.addEventListener("change", () => {
      const at = picked.indexOf(n.uid);
      if (box.checked && at < 0) picked.push(n.uid);
      if (!box.checked && at >= 0) picked.splice(at, 1);
      while (picked.length > 2) {
        const dropped = picked.shift()!;
        const other = root.querySelector<HTMLInputElement>(`#pick-${dropped}`);
        if (other) other.checked = false;
      }
      syncCompare();
    });
    return h(
      "li",
      { "data-uid": n.uid },
      parent && h("span", { class: "edge", title: `forked from ${parent.uid} after seq ${n.forkSeq}` }, `after seq ${n.forkSeq}`),
      h(
        "div",
        { class: n.uid === uid ? "node current" : "node", "aria-current": n.uid === uid ? "true" : undefined },
        box,
        h("a", { href: hrefOf({ view: "session", uid: n.uid }) }, s.metadata?.name || "(unnamed)"),
        h("code", { class: "muted" }, shortUid(n.uid)),
        h("span", { class: `chip state-${state.toLowerCase()}` }, state),
        h("span", { class: "muted" }, `head #${s.lastSeq}`),
        h("span", { class: "tokens", "data-usage": n.uid }, ""),
        parent && h("a", { class: "small", href: hrefOf({ view: "compare", uid: n.uid, other: parent.uid }) }, "compare with parent"),
      ),
      n.children.length > 0 &&
        h(
          "ul",
          {},
          n.children.map((c) => node(c, n)),
        ),
    );
  }

  // Token totals per branch, two journals at a time.
  async function usage(nodes: BranchNode[]): Promise<void> {
    const queue = [...nodes];
    const worker = async () => {
      for (let n = queue.shift(); n && !stopped; n = queue.shift()) {
        try {
          const recs = await records(n.uid);
          const all = usageOf(recs);
          const own = usageOf(recs, n.forkSeq);
          const cell = root.querySelector(`[data-usage="${n.uid}"]`);
          if (!cell) continue;
          cell.textContent =
            all.reports === 0 ? "no usage" : `${count(totalTokens(all))} tokens` + (n.forkSeq > 0n ? ` (${count(totalTokens(own))} since fork)` : "");
        } catch {
          // usage is a nicety; the tree stands without it
        }
      }
    };
    await Promise.all([worker(), worker()]);
  }

  void load();
  return {
    unmount() {
      stopped = true;
    },
  };
}
