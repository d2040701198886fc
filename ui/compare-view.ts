/**
 * Two branches side by side (`#<a>/compare/<b>`): the prefix they share (forks copy records
 * verbatim, so equal content hashes mean the same record), the seq where they diverge and what
 * each recorded there, what each said afterwards, and each side's records from that point on.
 */
import { EventKind, type LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import type { Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { textOf } from "../proto/messages.js";
import { api, records } from "./api.js";
import { compareBranches } from "./branches.js";
import { fill, h } from "./dom.js";
import { clip, count, shortHash, shortUid } from "./format.js";
import { buildTimeline, totalTokens, usageOf } from "./journal-model.js";
import * as notices from "./notices.js";
import { recordItem, summary } from "./record-view.js";
import { hrefOf } from "./routes.js";
import type { View } from "./view.js";

export function mountCompare(root: HTMLElement, a: string, b: string): View {
  let stopped = false;
  fill(
    root,
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: hrefOf({ view: "tree", uid: a }) }, "Branches"), " › compare"),
    h("p", { class: "muted" }, "Comparing…"),
  );
  void (async () => {
    try {
      const [sa, sb, ra, rb] = await Promise.all([api().get(a), api().get(b), records(a), records(b)]);
      if (stopped) return;
      render(sa, sb, ra, rb);
      notices.ok("compare");
    } catch (e) {
      notices.fail("compare", "Comparing branches", e);
    }
  })();

  function render(sa: Session, sb: Session, ra: LogRecord[], rb: LogRecord[]): void {
    const cmp = compareBranches(ra, rb);
    const timelineA = buildTimeline(ra);
    const name = (s: Session, uid: string) => s.metadata?.name || shortUid(uid);
    const lastCommon = cmp.common[cmp.common.length - 1];
    const at = cmp.divergesAt;
    // What a side did first after the split: a turn (by its input and answer), or a record.
    const first = (rs: LogRecord[]) => {
      const t = buildTimeline(rs).turns[0];
      if (t && t.number > 0 && t.input) return `a turn on “${clip(t.input, 80)}”` + (t.output ? `, answering “${clip(t.output, 80)}”` : "");
      return rs[0]?.event ? `#${rs[0].seq} ${clip(summary(rs[0].event), 120)}` : "nothing more (its journal ends here)";
    };
    const said = (rs: LogRecord[]) =>
      rs.flatMap((r) =>
        r.event?.body.case === "message" && r.event.kind === EventKind.EVENT_OUTPUT && textOf(r.event.body.value)
          ? [`#${r.seq} ${textOf(r.event.body.value)}`]
          : [],
      );
    const column = (s: Session, uid: string, rs: LogRecord[], all: LogRecord[]) => {
      const { timing, timed } = buildTimeline(all);
      const words = said(rs);
      const used = usageOf(rs);
      return h(
        "section",
        { class: "compare-col", "aria-label": `Branch ${name(s, uid)}` },
        h("h2", {}, h("a", { href: hrefOf({ view: "session", uid }) }, name(s, uid)), " ", h("code", { class: "muted" }, shortUid(uid))),
        h(
          "p",
          { class: "muted" },
          `${rs.length} record${rs.length === 1 ? "" : "s"} after the common prefix, head #${s.lastSeq}` +
            (used.reports ? ` · ${count(totalTokens(used))} tokens` : ""),
        ),
        h(
          "div",
          { class: "said" },
          h("h3", {}, "What it said"),
          words.length
            ? h(
                "ul",
                { class: "said-list" },
                words.map((w) => h("li", {}, clip(w, 300))),
              )
            : h("p", { class: "muted" }, "no output after the split"),
        ),
        h(
          "ol",
          { class: "records" },
          rs.map((r) => recordItem(r, { uid, timing, timed })),
        ),
      );
    };
    fill(
      root,
      h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: hrefOf({ view: "tree", uid: a }) }, "Branches"), " › compare"),
      h(
        "div",
        { class: "title-row" },
        h("h1", {}, `${name(sa, a)} and ${name(sb, b)}`),
        h("a", { class: "button", href: hrefOf({ view: "compare", uid: b, other: a }) }, "Swap sides"),
      ),
      h(
        "div",
        { class: "divergence", role: "status" },
        at === undefined
          ? h("p", {}, `The two journals are identical: ${cmp.common.length} records.`)
          : [
              h(
                "p",
                {},
                cmp.common.length
                  ? `They share seq 1–${lastCommon!.seq} (${cmp.common.length} records, hash ${shortHash(lastCommon!.contentHash)}…).`
                  : "They share no records.",
              ),
              h("p", {}, h("strong", {}, `They diverge at seq ${at}:`), ` ${name(sa, a)} then has ${first(cmp.a)}; ${name(sb, b)} has ${first(cmp.b)}.`),
            ],
      ),
      cmp.common.length > 0 &&
        h(
          "details",
          { class: "common" },
          h("summary", {}, `Common prefix: ${cmp.common.length} records`),
          h(
            "ol",
            { class: "records" },
            cmp.common.map((r) => recordItem(r, { uid: a, timing: timelineA.timing, timed: timelineA.timed })),
          ),
        ),
      h("div", { class: "compare-cols" }, column(sa, a, cmp.a, ra), column(sb, b, cmp.b, rb)),
    );
  }

  return {
    unmount() {
      stopped = true;
    },
  };
}
