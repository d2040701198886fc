import type { Reporter, TestModule } from "vitest/node";

/** Prints the closing line CI reads: `N passed, N failed`. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of modules) {
      let failedHere = 0;
      for (const t of m.children.allTests()) {
        const s = t.result().state;
        if (s === "passed") passed++;
        else if (s === "failed") failedHere++;
        else skipped++;
      }
      // A file that failed outside its tests (an import, a beforeAll) counts once: its tests
      // report as skipped, and the closing line must not say 0 failed.
      if (failedHere === 0 && m.state() === "failed") failedHere = 1;
      failed += failedHere;
    }
    // The leak check (test/node/support/leak-check.ts) runs after this and may add a failure.
    (globalThis as { testSummary?: { passed: number; failed: number } }).testSummary = { passed, failed };
    if (skipped > 0) console.log(`\n${skipped} skipped`);
    console.log(`\n${passed} passed, ${failed} failed`);
  }
}
