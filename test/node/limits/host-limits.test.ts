import { describe, expect, it } from "vitest";
import { hostLimits } from "../../../objects/config.js";

describe("hostLimits", () => {
  it("unset variables take the defaults and nothing is reported", () => {
    const l = hostLimits({});
    expect(l).toMatchObject({
      maxRequestBytes: 4 * 1024 * 1024,
      maxInputsPerExec: 64,
      maxEventBytes: 1_000_000,
      maxForkCount: 128,
      ratePerSecond: 200,
      journalCacheMaxBytes: 32 * 1024 * 1024,
    });
    expect(l.ignored).toEqual([]);
  });

  it("valid values apply; 0 turns off concurrency and rate limits; ceilings cap the event size and fork count", () => {
    const l = hostLimits({
      MAX_INPUTS_PER_EXEC: "8",
      MAX_CONCURRENT_EXECS: "0",
      RATE_LIMIT_PER_SECOND: "0",
      MAX_EVENT_BYTES: "5000000",
      MAX_FORK_COUNT: "500",
      JOURNAL_CACHE_MAX_BYTES: "0",
    });
    expect(l).toMatchObject({
      maxInputsPerExec: 8,
      maxConcurrentExecs: 0,
      ratePerSecond: 0,
      maxEventBytes: 1_900_000,
      maxForkCount: 128,
      journalCacheMaxBytes: 0,
    });
    expect(hostLimits({ JOURNAL_CACHE_MAX_BYTES: "67108864" }).journalCacheMaxBytes).toBe(64 * 1024 * 1024);
    expect(l.ignored).toEqual([]);
  });

  it("an unusable value falls back to the default and is named, so the Worker can warn about it", () => {
    const l = hostLimits({
      MAX_REQUEST_BYTES: "4MB",
      MAX_INPUTS_PER_EXEC: "0",
      MAX_STRUCT_DEPTH: "2.5",
      RATE_LIMIT_BURST: "-1",
      MAX_FORK_COUNT: " ",
      JOURNAL_CACHE_MAX_BYTES: "32MiB",
    });
    expect(l).toMatchObject({
      maxRequestBytes: 4 * 1024 * 1024,
      maxInputsPerExec: 64,
      maxStructDepth: 32,
      rateBurst: 1000,
      maxForkCount: 128,
      journalCacheMaxBytes: 32 * 1024 * 1024,
    });
    expect(l.ignored).toEqual(["MAX_REQUEST_BYTES", "MAX_INPUTS_PER_EXEC", "MAX_STRUCT_DEPTH", "RATE_LIMIT_BURST", "JOURNAL_CACHE_MAX_BYTES"]);
  });
});
