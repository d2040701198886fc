/**
 * The inspector UI: one static page served by the Worker (no build step). It talks to the same
 * Sessions API as any client, with the Connect protocol's JSON encoding. The page is built in
 * ui-page.ts; its test is test/node/integration/ui.test.ts.
 */
import { createHash } from "node:crypto";
import { INSPECTOR_HTML, INSPECTOR_JS, UI_CSS } from "./ui-page.js";

/**
 * CSP source for one inline block: SHA-256 of its exact text, base64. Synchronous node:crypto
 * (nodejs_compat), since serveUi is synchronous; types/node-crypto.d.ts declares only hex digests.
 */
function inlineHash(text: string): string {
  const hex = createHash("sha256").update(text).digest("hex");
  const binary = String.fromCharCode(...hex.match(/../g)!.map((h) => parseInt(h, 16)));
  return `'sha256-${btoa(binary)}'`;
}

// The page loads nothing from elsewhere and calls only this origin's API; the policy says so.
// Only the page's own inline script and style run (by hash), so injected markup stays inert.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src ${inlineHash(INSPECTOR_JS)}`,
  `style-src ${inlineHash(UI_CSS)}`,
  "connect-src 'self'",
  "img-src data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export function serveUi(pathname: string): Response | undefined {
  if (pathname !== "/" && pathname !== "/ui" && pathname !== "/index.html") return undefined;
  return new Response(INSPECTOR_HTML, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": CONTENT_SECURITY_POLICY,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });
}
