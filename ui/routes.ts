/**
 * The inspector's addresses: every view has one, in the URL fragment, so links, the back button
 * and `/#<uid>` (printed by the README and the CLI) all work. Parsed and formatted here only.
 *
 *   #/sessions?project=p&state=AWAITING&harness=h&label=k=v&q=text   the sessions list
 *   #/approvals?project=p                                            the approvals inbox
 *   #<uid>   #<uid>/seq/<n>                                          a session (at a record)
 *   #<uid>/tree                                                      its fork tree
 *   #<uid>/compare/<uid>                                             two branches side by side
 */

export interface ListFilters {
  state: string;
  harness: string;
  label: string;
  q: string;
}

export type Route =
  | { view: "sessions"; project: string; filters: ListFilters }
  | { view: "approvals"; project: string }
  | { view: "session"; uid: string; seq?: bigint }
  | { view: "tree"; uid: string }
  | { view: "compare"; uid: string; other: string };

const UID = /^sess-[0-9a-f]{24}$/;
export const DEFAULT_PROJECT = "default";

export function isUid(s: string): boolean {
  return UID.test(s);
}

export function routeFromHash(hash: string): Route {
  const raw = hash.replace(/^#/, "");
  const [path = "", query = ""] = raw.split("?", 2);
  const params = new URLSearchParams(query);
  const project = params.get("project") || DEFAULT_PROJECT;
  const parts = path.split("/").filter((p) => p !== "");
  const [first = "", second, third] = parts;
  if (isUid(first)) {
    if (second === "tree") return { view: "tree", uid: first };
    if (second === "compare" && third && isUid(third)) return { view: "compare", uid: first, other: third };
    if (second === "seq" && third && /^[0-9]{1,19}$/.test(third)) return { view: "session", uid: first, seq: BigInt(third) };
    return { view: "session", uid: first };
  }
  if (first === "approvals") return { view: "approvals", project };
  return {
    view: "sessions",
    project,
    filters: { state: params.get("state") ?? "", harness: params.get("harness") ?? "", label: params.get("label") ?? "", q: params.get("q") ?? "" },
  };
}

export function hrefOf(route: Route): string {
  switch (route.view) {
    case "sessions": {
      const p = new URLSearchParams();
      if (route.project !== DEFAULT_PROJECT) p.set("project", route.project);
      for (const [k, v] of Object.entries(route.filters)) if (v) p.set(k, v);
      const q = p.toString();
      return "#/sessions" + (q ? "?" + q : "");
    }
    case "approvals":
      return "#/approvals" + (route.project !== DEFAULT_PROJECT ? "?" + new URLSearchParams({ project: route.project }).toString() : "");
    case "session":
      return "#" + route.uid + (route.seq !== undefined ? "/seq/" + route.seq.toString() : "");
    case "tree":
      return "#" + route.uid + "/tree";
    case "compare":
      return "#" + route.uid + "/compare/" + route.other;
  }
}

export const NO_FILTERS: ListFilters = { state: "", harness: "", label: "", q: "" };
