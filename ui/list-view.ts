/**
 * The sessions list (`#/sessions?…`): a project's sessions, newest first, page by page, filtered
 * by exec state, harness, label and a name/uid search (the filters live in the address, so a
 * filtered list is a link), with state kept live by re-reading the loaded pages every few seconds.
 */
import { ExecState, type Session } from "../proto/gen/agentsessions/v1/session_pb.js";
import { api, sessionsPage } from "./api.js";
import { fill, h } from "./dom.js";
import { clockTime, execStateName, isoTime, shortUid } from "./format.js";
import * as notices from "./notices.js";
import { startPolling } from "./poll.js";
import { hrefOf, type ListFilters } from "./routes.js";
import type { View } from "./view.js";

const STATES = ["RUNNING", "AWAITING", "COMPLETED", "FAILED", "CANCELED", "PENDING"];

export function matches(s: Session, f: ListFilters): boolean {
  if (f.state && execStateName(s.execState) !== f.state) return false;
  if (f.harness && s.harness !== f.harness) return false;
  if (f.label) {
    const [k = "", v] = f.label.split("=", 2);
    if (!(k in s.labels) || (v !== undefined && s.labels[k] !== v)) return false;
  }
  if (f.q) {
    const q = f.q.toLowerCase();
    const m = s.metadata;
    if (!(m?.name ?? "").toLowerCase().includes(q) && !(m?.uid ?? "").includes(q)) return false;
  }
  return true;
}

export function mountList(root: HTMLElement, project: string, initial: ListFilters): View {
  const filters: ListFilters = { ...initial };
  let sessions: Session[] = [];
  let pages: string[] = [""]; // page tokens of the pages loaded
  let next = "";
  let shown = "";

  const input = (name: keyof ListFilters, label: string, placeholder: string) => {
    const el = h("input", {
      id: `filter-${name}`,
      name,
      value: filters[name],
      autocomplete: "off",
      placeholder,
      "data-search": name === "q" ? "1" : undefined,
    });
    el.addEventListener("input", () => setFilter(name, el.value.trim()));
    return h("span", { class: "field" }, h("label", { for: `filter-${name}` }, label), el);
  };
  const stateSelect = h(
    "select",
    { id: "filter-state", name: "state" },
    h("option", { value: "" }, "any state"),
    STATES.map((s) => h("option", { value: s }, s)),
  );
  stateSelect.value = filters.state;
  stateSelect.addEventListener("change", () => setFilter("state", stateSelect.value));
  const harnessSelect = h("select", { id: "filter-harness", name: "harness" });
  harnessSelect.addEventListener("change", () => setFilter("harness", harnessSelect.value));
  const projectInput = h("input", { id: "project", name: "project", value: project, autocomplete: "off" });
  const projectForm = h("form", { class: "project-form" }, h("label", { for: "project" }, "Project"), projectInput, h("button", { type: "submit" }, "Open"));
  projectForm.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = hrefOf({ view: "sessions", project: projectInput.value.trim() || "default", filters });
  });
  const body = h("tbody", {});
  const count = h("p", { class: "muted", role: "status" });
  const more = h("button", { type: "button", hidden: true }, "Load more");
  more.addEventListener("click", () => void loadMore());
  const awaiting = h("p", { class: "awaiting-note", hidden: true });

  fill(
    root,
    h("div", { class: "title-row" }, h("h1", {}, "Sessions"), projectForm),
    h(
      "form",
      { class: "filters", role: "search", "aria-label": "Filter sessions", onsubmit: (e: Event) => e.preventDefault() },
      input("q", "Search", "name or uid ( / )"),
      h("span", { class: "field" }, h("label", { for: "filter-state" }, "State"), stateSelect),
      h("span", { class: "field" }, h("label", { for: "filter-harness" }, "Harness"), harnessSelect),
      input("label", "Label", "key=value"),
      h("button", { type: "button", onclick: () => clearFilters() }, "Clear"),
    ),
    awaiting,
    h(
      "table",
      { class: "sessions" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Session", "State", "Harness", "Last seq", "Branch of", "Updated"].map((c) => h("th", { scope: "col" }, c)),
        ),
      ),
      body,
    ),
    count,
    more,
    createForm(project),
  );

  function setFilter(name: keyof ListFilters, value: string): void {
    filters[name] = value;
    // The address follows the filters without a new history entry per keystroke.
    history.replaceState(null, "", hrefOf({ view: "sessions", project, filters }));
    render(true);
  }

  function clearFilters(): void {
    for (const k of Object.keys(filters) as Array<keyof ListFilters>) filters[k] = "";
    for (const el of root.querySelectorAll<HTMLInputElement | HTMLSelectElement>(".filters input, .filters select")) el.value = "";
    history.replaceState(null, "", hrefOf({ view: "sessions", project, filters }));
    render(true);
  }

  function render(force = false): void {
    const harnesses = [...new Set(sessions.map((s) => s.harness).filter(Boolean))].sort();
    if (filters.harness && !harnesses.includes(filters.harness)) harnesses.push(filters.harness);
    fill(
      harnessSelect,
      h("option", { value: "" }, "any harness"),
      harnesses.map((x) => h("option", { value: x }, x)),
    );
    harnessSelect.value = filters.harness;
    const visible = sessions.filter((s) => matches(s, filters));
    const sig = visible.map((s) => `${s.metadata?.uid}:${s.lastSeq}:${s.execState}:${s.pendingApproval ? 1 : 0}`).join(",");
    if (force || sig !== shown) {
      shown = sig;
      fill(
        body,
        visible.length
          ? visible.map(row)
          : h(
              "tr",
              {},
              h("td", { colspan: 6, class: "empty" }, sessions.length ? "No session matches these filters." : `No sessions in project ${project} yet.`),
            ),
      );
    }
    count.textContent =
      `Showing ${visible.length} of ${sessions.length} loaded session${sessions.length === 1 ? "" : "s"}` + (next ? "; more on the server." : ".");
    more.hidden = !next;
    const waiting = sessions.filter((s) => s.pendingApproval).length;
    awaiting.hidden = waiting === 0;
    fill(
      awaiting,
      `${waiting} session${waiting === 1 ? "" : "s"} await${waiting === 1 ? "s" : ""} an approval decision: `,
      h("a", { href: hrefOf({ view: "approvals", project }) }, "open the approvals inbox"),
    );
  }

  async function loadMore(): Promise<void> {
    try {
      const page = await sessionsPage(project, next);
      pages = [...pages, next];
      sessions = [...sessions, ...page.sessions];
      next = page.next;
      render();
    } catch (e) {
      notices.fail("list", "Listing sessions", e);
    }
  }

  // Re-reads the pages loaded so far, so states stay live.
  const stop = startPolling(
    async () => {
      const fresh: Session[] = [];
      let token = "";
      for (let i = 0; i < pages.length; i++) {
        const page = await sessionsPage(project, token);
        fresh.push(...page.sessions);
        token = page.next;
        if (!token) break;
      }
      sessions = fresh;
      next = token;
      render();
    },
    { intervalMs: 4000, onError: (e) => notices.fail("list", "Listing sessions", e), onOk: () => notices.ok("list") },
  );
  return { unmount: stop };
}

function row(s: Session): HTMLTableRowElement {
  const m = s.metadata;
  const uid = m?.uid ?? "";
  const state = execStateName(s.execState);
  const updated = m?.updateTime ? Number(m.updateTime.seconds) * 1000 : undefined;
  return h(
    "tr",
    { "data-uid": uid },
    h("td", { class: "name" }, h("a", { href: hrefOf({ view: "session", uid }) }, m?.name || "(unnamed)"), " ", h("code", { class: "muted" }, shortUid(uid))),
    h(
      "td",
      { class: "state" },
      h("span", { class: `chip state-${state.toLowerCase()}` }, state),
      s.pendingApproval && s.execState === ExecState.EXEC_AWAITING ? h("span", { class: "chip state-awaiting" }, "approval") : null,
    ),
    h("td", { "data-label": "harness" }, s.harness),
    h("td", { "data-label": "seq", class: "num" }, String(s.lastSeq)),
    s.parentUid
      ? h("td", { "data-label": "branch of" }, h("a", { href: hrefOf({ view: "tree", uid }) }, shortUid(s.parentUid)), ` @${s.forkSeq}`)
      : h("td", { class: "none" }, "–"),
    h("td", { "data-label": "updated" }, updated !== undefined ? h("time", { datetime: isoTime(updated), title: isoTime(updated) }, clockTime(updated)) : "–"),
  );
}

function createForm(project: string): HTMLElement {
  const name = h("input", { id: "new-name", name: "name", autocomplete: "off" });
  const harness = h("input", { id: "new-harness", name: "harness", value: "echo", autocomplete: "off" });
  const labels = h("input", { id: "new-labels", name: "labels", autocomplete: "off", placeholder: "team=a, env=dev" });
  const form = h(
    "form",
    { class: "create" },
    h("label", { for: "new-name" }, "Name"),
    name,
    h("label", { for: "new-harness" }, "Harness"),
    harness,
    h("label", { for: "new-labels" }, "Labels"),
    labels,
    h("button", { type: "submit", class: "primary" }, "Create session"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const pairs = labels.value
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean)
      .map((p) => p.split("=", 2) as [string, string?]);
    try {
      const s = await api().create({
        project,
        name: name.value.trim(),
        harness: harness.value.trim(),
        labels: Object.fromEntries(pairs.map(([k, v]) => [k, v ?? ""])),
      });
      notices.ok("create");
      location.hash = hrefOf({ view: "session", uid: s.metadata?.uid ?? "" });
    } catch (err) {
      notices.fail("create", "Create session", err);
    }
  });
  return h("details", { class: "new-session" }, h("summary", {}, "New session"), form);
}
