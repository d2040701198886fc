/**
 * A real browser for UI tests: Debian's chromium (/usr/bin/chromium, installed by apt; nothing
 * downloads a browser) driven by playwright-core, with a fresh profile in a temp folder that
 * close() removes. One per test file, shared by its tests. Pages record console errors, page
 * errors and Content-Security-Policy violations, so a test can assert there were none.
 * Screenshots go to test-results/ui/ (git-ignored), never into the run's temp folder.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { ROOT } from "../../../scripts/dev-server.js";

export const CHROMIUM = "/usr/bin/chromium";
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
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium; .ci/run does)`);
  const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      viewport: { width: 1280, height: 900 },
    });
  } catch (e) {
    rmSync(profile, { recursive: true, force: true });
    throw e;
  }
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
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
