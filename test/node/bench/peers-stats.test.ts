/**
 * The arithmetic of `npm run bench:peers` (bench/peers/stats.ts, bench/peers/fsyncs.ts): the bench
 * itself asserts nothing, so the numbers it prints are only as good as these helpers.
 */
import { describe, expect, it } from "vitest";
import { parseStraceCounts } from "../../../bench/peers/fsyncs.js";
import { parseProcStat } from "../../../bench/peers/processes.js";
import { bestPeer, formatTable, median, type Metric, percentile, ratio, roundOrder, summaryLine } from "../../../bench/peers/stats.js";

const latency: Metric = {
  key: "fresh_turn_ms",
  label: "fresh turn",
  unit: "ms",
  better: "lower",
  values: { ours: 20, langgraph: 10, aichat: 16, bare_do: 8 },
};
const throughput: Metric = { ...latency, key: "tput", better: "higher", values: { ours: 90, langgraph: 200, aichat: 100, bare_do: 210 } };

describe("peer bench stats", () => {
  it("median: middle sample, mean of the two middle ones for an even count, NaN for none", () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it("percentile: nearest rank, clamped to the samples", () => {
    const xs = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 90)).toBe(90);
    expect(percentile(xs, 0)).toBe(10);
    expect(percentile(xs, 100)).toBe(100);
  });

  it("roundOrder: rotates by one each round, so every system leads once per cycle", () => {
    const s = ["a", "b", "c"];
    expect([0, 1, 2, 3].map((r) => roundOrder(s, r).join(""))).toEqual(["abc", "bca", "cab", "abc"]);
  });

  it("bestPeer: the lowest latency and the highest throughput, never ours", () => {
    expect(bestPeer(latency)).toEqual({ name: "bare_do", value: 8 });
    expect(bestPeer(throughput)).toEqual({ name: "bare_do", value: 210 });
    expect(bestPeer({ ...latency, values: { ours: 1 } })).toBeUndefined();
  });

  it("ratio: peer ÷ ours, undefined when a side is missing or ours is zero", () => {
    expect(ratio(10, 20)).toBe(0.5);
    expect(ratio(undefined, 20)).toBeUndefined();
    expect(ratio(10, 0)).toBeUndefined();
  });

  it("summaryLine: every system's value and the best peer's ratio to ours", () => {
    expect(summaryLine(latency)).toBe("bench peers fresh_turn_ms ours=20.0 langgraph=10.0 aichat=16.0 bare_do=8.00 ratio_best_peer=0.40 best_peer=bare_do");
    expect(summaryLine({ ...throughput, values: { ours: 1500, aichat: 3000 } })).toBe(
      "bench peers tput ours=1500 aichat=3000 ratio_best_peer=2.00 best_peer=aichat",
    );
  });

  it("formatTable: ours plain, each peer with its ratio, a dash for a system not measured", () => {
    const t = formatTable([{ ...latency, values: { ours: 20, langgraph: 10 } }]).split("\n");
    expect(t[0]).toBe("| metric | ours | langgraph | aichat | bare_do |");
    expect(t[2]).toBe("| fresh turn (ms) | 20.0 | 10.0 (0.50x) | – | – |");
  });

  it("parseStraceCounts: sums fsync and fdatasync calls, with or without an errors column", () => {
    const out = [
      "% time     seconds  usecs/call     calls    errors syscall",
      "------ ----------- ----------- --------- --------- ----------------",
      " 90.00    0.001690          58        29           fsync",
      " 10.00    0.000100          10         7         1 fdatasync",
      "------ ----------- ----------- --------- --------- ----------------",
      "100.00    0.001790          50        36         1 total",
    ].join("\n");
    expect(parseStraceCounts(out)).toBe(36);
    expect(parseStraceCounts("")).toBe(0);
  });

  it("parseProcStat: user + system ticks as ms, with a process name that holds spaces and parentheses", () => {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime …
    const line = "4242 (work (er) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 123 456 789";
    expect(parseProcStat(line, 100)).toEqual({ comm: "work (er) d", cpuMs: 3250 });
    expect(parseProcStat(line, 250).cpuMs).toBe(1300);
    expect(() => parseProcStat("garbage", 100)).toThrow(/not a \/proc/);
    expect(() => parseProcStat("1 (x) S 1", 100)).toThrow(/no CPU times/);
  });
});
