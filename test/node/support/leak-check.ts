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
 *
 * It also prints the requests sent again after `wrangler dev`'s proxy 503 (proxy-resend.ts), and
 * fails the run when there were more than PROXY_RESENDS_ALLOWED.
 */
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { GROUPS_DIR, groupAlive, ROOT, sleep } from "../../../scripts/dev-server.js";
import { ACTOR_BUNDLES } from "../../fixtures/ateapi/actor-worker.js";
import { PROXY_RESENDS_ALLOWED, PROXY_RESENDS_FILE } from "./proxy-resend.js";

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
  const resent = resends(root);
  if (resent.length > 0)
    console.log(`\nwrangler dev's proxy answered 503 "restarted mid-request" to ${resent.length} request(s), sent again: ${resent.join("; ")}`);
  const left = list(root).filter((name) => name !== GROUPS_DIR && name !== PROXY_RESENDS_FILE && !isVitestCache(join(root, name)) && !isToolCache(name));
  if (left.length > 0) leaks.push(`left in the temp folder: ${left.join(", ")}`);
  const problems = leaks.map((l) => `a test did not clean up after itself: ${l}`);
  if (resent.length > PROXY_RESENDS_ALLOWED) {
    problems.push(
      `${resent.length} requests were sent again after the proxy's 503, more than the ${PROXY_RESENDS_ALLOWED} allowed (a Worker crashing mid-request gets it too)`,
    );
  }
  rmSync(root, { recursive: true, force: true });
  removeWranglerScratch();
  const summary = (globalThis as { testSummary?: { passed: number; failed: number } }).testSummary ?? { passed: 0, failed: 0 };
  if (problems.length === 0) {
    // The line above came after the closing line: the closing line is written again, last.
    if (resent.length > 0) console.log(`\n${summary.passed} passed, ${summary.failed} failed`);
    return;
  }
  // vitest reports a failed teardown but still exits 0, after the closing line: correct both.
  process.exitCode = 1;
  console.error(`\nleak check: ${problems.join("; ")}`);
  console.log(`\n${summary.passed} passed, ${summary.failed + 1} failed`);
}

/** The requests test/node/support/proxy-resend.ts sent again in this run. */
function resends(root: string): string[] {
  try {
    return readFileSync(join(root, PROXY_RESENDS_FILE), "utf8")
      .split("\n")
      .filter((l) => l !== "");
  } catch {
    return [];
  }
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
