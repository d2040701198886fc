/**
 * The inspector UI: static pages served by the Worker (no build step). It talks to the same
 * Sessions API as any client, with the Connect protocol's JSON encoding.
 */
import { INSPECTOR_HTML } from "./ui-page.js";

export function serveUi(pathname: string): Response | undefined {
  if (pathname !== "/" && pathname !== "/ui" && pathname !== "/index.html") return undefined;
  return new Response(INSPECTOR_HTML, {
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}
