/**
 * The node project's leak check (a vitest globalSetup). vitest.config.ts points TMPDIR and
 * AGENTSESSIONS_TMP at one fresh folder per run, so every temp folder a test makes, and every
 * `wrangler dev` scripts/dev-server.ts starts (it notes each process group there), belongs to this
 * run. At the end of the run, a server still running or anything left in that folder fails the
 * run with what was left behind; it is then removed, so a failed run leaks nothing either.
 *
 * wrangler also bundles into `.wrangler/tmp/` beside wrangler.toml and removes that folder when it
 * exits; a server a test kills on purpose (SIGKILL of its group: a crash) cannot. Those folders
 * made during the run are removed here too: a tool's scratch, not a test's leak.
 */
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { GROUPS_DIR, groupAlive, ROOT, sleep } from "../../../scripts/dev-server.js";
import { ACTOR_BUNDLES } from "../../fixtures/ateapi/actor-worker.js";

const WRANGLER_TMP = join(ROOT, ".wrangler", "tmp");
let startedMs = 0;

export function setup(): void {
  if (!process.env.AGENTSESSIONS_TMP) throw new Error("vitest.config.ts sets AGENTSESSIONS_TMP for the leak check; run the tests through it");
  startedMs = Date.now();
}

/** Removes wrangler's bundle folders made since the run started (older ones may be a developer's `npm start`). */
function removeWranglerScratch(): void {
  for (const name of list(WRANGLER_TMP)) {
    if (!/^(dev|bundle)-/.test(name)) continue;
    const dir = join(WRANGLER_TMP, name);
    try {
      if (statSync(dir).mtimeMs >= startedMs - 1000) rmSync(dir, { recursive: true, force: true });
    } catch {
      // gone meanwhile
    }
  }
}

export async function teardown(): Promise<void> {
  const root = process.env.AGENTSESSIONS_TMP!;
  const leaks: string[] = [];
  const groups = list(join(root, GROUPS_DIR)).map(Number);
  // A server stopped at the very end may take a moment to go.
  for (let i = 0; i < 50 && groups.some(groupAlive); i++) await sleep(100);
  for (const g of groups.filter(groupAlive)) {
    leaks.push(`a wrangler dev (process group ${g}) still runs`);
    try {
      process.kill(-g, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  const left = list(root).filter((name) => name !== GROUPS_DIR && !isVitestCache(join(root, name)) && !isToolCache(name));
  if (left.length > 0) leaks.push(`left in the temp folder: ${left.join(", ")}`);
  rmSync(root, { recursive: true, force: true });
  removeWranglerScratch();
  if (leaks.length === 0) return;
  // vitest reports a failed teardown but still exits 0, after the closing line: correct both.
  process.exitCode = 1;
  const summary = (globalThis as { testSummary?: { passed: number; failed: number } }).testSummary ?? { passed: 0, failed: 0 };
  console.error(`\nleak check: a test did not clean up after itself: ${leaks.join("; ")}`);
  console.log(`\n${summary.passed} passed, ${summary.failed + 1} failed`);
}

/** vitest keeps transformed modules in a folder of its own (`<id>/ssr/…`) and removes it after this runs. */
function isVitestCache(dir: string): boolean {
  const inside = list(dir);
  return inside.length > 0 && inside.every((n) => n === "ssr" || n === "web");
}

/**
 * tsx keeps its transform cache in `<tmpdir>/tsx-<uid>`; every `node --import tsx` child a test
 * starts (pod incarnations, `npm run pod`) writes there. The substrate stand-in keeps its actors'
 * bundles in `actor-bundles` (test/fixtures/ateapi/actor-worker.ts). Both are a tool's cache,
 * removed with the run's folder, not something a test forgot.
 */
function isToolCache(name: string): boolean {
  return /^tsx-\d+$/.test(name) || name === ACTOR_BUNDLES || isMiniflareRuntime(name);
}

/** The workers pool's Miniflare keeps its runtime files in `miniflare-<hash>` under TMPDIR: the pool's own. */
function isMiniflareRuntime(name: string): boolean {
  return /^miniflare-[0-9a-f]{32}$/.test(name);
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
