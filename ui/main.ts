/**
 * The inspector's entry point (bundled by scripts/build-ui.ts into the asset worker/ui.ts serves):
 * wires the header (token, navigation), routes the address to a view (routes.ts), and keeps one
 * view mounted at a time. docs/ui.md describes the views.
 */
import { setToken, token } from "./api.js";
import { mountCompare } from "./compare-view.js";
import { startCountdowns } from "./countdown.js";
import { byId } from "./dom.js";
import { mountInbox } from "./inbox-view.js";
import { mountList } from "./list-view.js";
import * as notices from "./notices.js";
import { type Route, routeFromHash } from "./routes.js";
import { mountSession } from "./session-view.js";
import { mountTree } from "./tree-view.js";
import type { View } from "./view.js";

let current: View | undefined;
let currentKey = "";

function mount(route: Route): View {
  const root = byId("view");
  switch (route.view) {
    case "sessions":
      return mountList(root, route.project, route.filters);
    case "approvals":
      return mountInbox(root, route.project);
    case "session":
      return mountSession(root, route.uid, route.seq);
    case "tree":
      return mountTree(root, route.uid);
    case "compare":
      return mountCompare(root, route.uid, route.other);
  }
}

function keyOf(route: Route): string {
  // A filter change on the list is not a new view (the list updates itself and the address).
  return route.view === "sessions" ? `sessions:${route.project}` : JSON.stringify(route, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
}

function route(force = false): void {
  const r = routeFromHash(location.hash);
  const key = keyOf(r);
  if (!force && key === currentKey) return;
  current?.unmount();
  notices.clearAll();
  currentKey = key;
  document.title = "agentsessions inspector";
  for (const link of document.querySelectorAll<HTMLElement>("nav.views a")) {
    const on = link.dataset.view === (r.view === "approvals" ? "approvals" : r.view === "sessions" ? "sessions" : "");
    if (on) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  current = mount(r);
}

function boot(): void {
  const input = byId<HTMLInputElement>("token");
  input.value = token();
  input.addEventListener("change", () => {
    setToken(input.value.trim());
    route(true);
  });
  window.addEventListener("hashchange", () => route());
  document.addEventListener("keydown", (e) => {
    const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement;
    if (e.key === "/" && !typing) {
      const search = document.querySelector<HTMLInputElement>("[data-search]");
      if (search) {
        e.preventDefault();
        search.focus();
      }
    }
  });
  // The skip link focuses the view; following "#view" as an address would leave it.
  document.querySelector(".skip")?.addEventListener("click", (e) => {
    e.preventDefault();
    byId("view").focus();
  });
  startCountdowns();
  route(true);
}

boot();
