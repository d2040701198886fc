/**
 * Pages for UI tests in a real browser (chromium.ts: Debian's Chromium driven by playwright-core,
 * on a fresh profile that close() removes). One per test file, shared by its tests. Pages record console errors, page
 * errors and Content-Security-Policy violations, so a test can assert there were none.
 * Screenshots go to test-results/ui/ (git-ignored), never into the run's temp folder.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { ROOT } from "../../../scripts/dev-server.js";
import { launchChromium } from "./chromium.js";

export const SCREENSHOTS = join(ROOT, "test-results", "ui");

export interface TestPage {
  page: Page;
  /** Console errors, uncaught page errors and CSP violations seen so far. */
  problems: string[];
}

export interface TestBrowser {
  open(opts?: { width?: number; height?: number; dark?: boolean }): Promise<TestPage>;
  screenshot(page: Page, name: string): Promise<void>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const { context, close } = await launchChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    async open(o = {}) {
      const page = await context.newPage();
      await page.setViewportSize({ width: o.width ?? 1280, height: o.height ?? 900 });
      await page.emulateMedia({ colorScheme: o.dark ? "dark" : "light" });
      const problems: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(`console: ${m.text()}`);
      });
      page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
      // CSP violations are events in the page; collect them through a binding.
      await page.exposeFunction("__cspViolation", (text: string) => problems.push(`csp: ${text}`));
      await page.addInitScript(() => {
        document.addEventListener("securitypolicyviolation", (e) => {
          (window as unknown as { __cspViolation(t: string): void }).__cspViolation(`${e.violatedDirective} ${e.blockedURI}`);
        });
      });
      return { page, problems };
    },
    async screenshot(page, name) {
      await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
    },
    close,
  };
}
