/**
 * The closing line CI reads (test/summary-reporter.ts): a file that fails outside its tests, as
 * when its beforeAll throws and vitest marks its tests skipped, must count as a failure.
 */
import type { TestModule } from "vitest/node";
import { afterEach, describe, expect, it, vi } from "vitest";
import SummaryReporter from "../../summary-reporter.js";

type State = "passed" | "failed" | "skipped";

/** A stand-in for vitest's TestModule with only what the reporter reads. */
function moduleOf(state: State, tests: State[]): TestModule {
  return {
    state: () => state,
    children: { allTests: () => tests.map((s) => ({ result: () => ({ state: s }) }))[Symbol.iterator]() },
  } as unknown as TestModule;
}

function closingLine(modules: TestModule[]): string {
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  new SummaryReporter().onTestRunEnd(modules);
  const lines = log.mock.calls.map((c) => String(c[0]).trim());
  return lines[lines.length - 1]!;
}

afterEach(() => {
  vi.restoreAllMocks();
  delete (globalThis as { testSummary?: unknown }).testSummary;
});

describe("summary reporter", () => {
  it("counts passed and failed tests", () => {
    expect(closingLine([moduleOf("passed", ["passed", "passed"]), moduleOf("failed", ["passed", "failed", "skipped"])])).toBe("3 passed, 1 failed");
  });

  it("counts a file whose beforeAll failed, though its tests show as skipped", () => {
    expect(closingLine([moduleOf("passed", ["passed"]), moduleOf("failed", ["skipped", "skipped", "skipped"])])).toBe("1 passed, 1 failed");
  });

  it("counts a file that failed to load and holds no tests", () => {
    expect(closingLine([moduleOf("failed", [])])).toBe("0 passed, 1 failed");
  });
});
