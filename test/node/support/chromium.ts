/**
 * Debian's Chromium driven by playwright-core, for tests that need a real browser (CORS from a
 * page on another origin). `launchChromium()` starts it headless on a fresh profile in a temp
 * folder; `close()` stops it and removes the profile. Install it with `apt-get install -y chromium`
 * (.ci/run does when it is missing).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

export interface Chromium {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Chromium> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    return {
      context,
      close: async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (e) {
    rmSync(profile, { recursive: true, force: true });
    throw e;
  }
}
