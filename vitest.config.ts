import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// One temp folder per run for everything the tests make (servers' storage, CLI scratch files):
// test/node/support/leak-check.ts fails the run when anything in it outlives the run.
if (!process.env.AGENTSESSIONS_TMP) {
  const root = mkdtempSync(join(tmpdir(), "agentsessions-run-"));
  process.env.AGENTSESSIONS_TMP = root;
  // The node project's leak check has reported (and removed) what was left; a run of the worker
  // project alone has no leak check, and tools may recreate the folder after it: it goes here.
  process.on("exit", () => rmSync(root, { recursive: true, force: true }));
}
process.env.TMPDIR = process.env.AGENTSESSIONS_TMP;

// Two projects, one per runtime: code that runs in workerd is tested in the workers
// pool; the CLI, SDK, stores on sql.js and the integration tests against `wrangler dev` run in Node.
export default defineConfig({
  test: {
    reporters: ["default", "./test/summary-reporter.ts"],
    // Two test files at once even on 2 cores (vitest's default is cores - 1): most files spend
    // their time waiting on wrangler dev or a child process, not on the CPU.
    maxWorkers: 2,
    // The Worker's one-line-per-RPC request log is noise in test output.
    onConsoleLog: (log) => !log.includes('"msg":"rpc"'),
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            // The test-only harnesses (runtimes/builtin/testing.ts) are served in the pool, and
            // requests come from loopback with authentication off (docs/security.md).
            miniflare: { bindings: { TEST_HARNESSES: "1", AUTH_MODE: "none" } },
          }),
        ],
        test: { name: "worker", include: ["test/worker/**/*.test.ts"] },
      },
      {
        test: {
          name: "node",
          include: ["test/node/**/*.test.ts"],
          environment: "node",
          // The leak check is listed first so its teardown runs last, after the shared server stopped.
          globalSetup: ["./test/node/support/leak-check.ts", "./test/node/support/global-setup.ts"],
          // wrangler dev's proxy 503 for a request the Worker never saw is sent again, and counted.
          setupFiles: ["./test/node/support/proxy-resend-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
