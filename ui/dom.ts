/**
 * Text-only DOM building for the inspector: every string becomes a Text node or an attribute set
 * with setAttribute, never markup, so no server string can become HTML (docs/ui.md "Security").
 * The page's policy also requires Trusted Types, so assigning markup to an element would throw anyway.
 */

export type Child = Node | string | number | bigint | null | undefined | false | readonly Child[];

type Listener = (e: Event) => void;
export type Props = Record<string, string | number | boolean | undefined | null | Listener>;

/** h("a", { href: "#…", class: "x", onclick: f }, "text", child, [more]). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props?: Props | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") {
      node.addEventListener(key.replace(/^on/, ""), value);
    } else if (key === "href" && !/^[#/]/.test(String(value))) {
      // Links only ever point inside the inspector; anything else would be data turned into a URL.
      throw new Error(`refusing a link that leaves the page: ${String(value).slice(0, 40)}`);
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(node: Node, children: Child): Node {
  if (Array.isArray(children)) {
    for (const c of children) append(node, c);
  } else if (children instanceof Node) {
    node.appendChild(children);
  } else if (children !== null && children !== undefined && children !== false) {
    node.appendChild(document.createTextNode(String(children)));
  }
  return node;
}

/** Replaces the node's children. */
export function fill(node: Element, ...children: Child[]): void {
  node.replaceChildren();
  append(node, children);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node as T;
}
