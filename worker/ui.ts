/**
 * Serves the inspector UI: the page at `/` and its two bundled assets under `/ui/`, all from
 * worker/gen/ui-assets.ts (built from ui/ by scripts/build-ui.ts; docs/ui.md). The browser talks
 * to the same Sessions API as any client. Tested by test/node/integration/ui.test.ts and, in a
 * real browser, test/node/integration/ui-browser.test.ts.
 */
import { UI_ASSETS, UI_PAGE } from "./gen/ui-assets.js";

// The page loads only its own script and stylesheet (by path, with integrity) and calls only this
// origin's API. No inline script or style runs, and Trusted Types are required with no policy, so
// no string can ever become markup or code: the UI builds its DOM from text nodes.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

const COMMON_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

export function serveUi(pathname: string): Response | undefined {
  if (pathname === "/" || pathname === "/ui" || pathname === "/index.html") {
    return new Response(UI_PAGE, { headers: { ...COMMON_HEADERS, "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
  }
  const asset = UI_ASSETS[pathname];
  if (!asset) return undefined;
  // Asset paths carry their content hash: a new build is a new path, so they never go stale.
  return new Response(asset.body, { headers: { ...COMMON_HEADERS, "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable" } });
}
