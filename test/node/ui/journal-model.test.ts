/**
 * The inspector's reading of a journal (ui/journal-model.ts): turns, lifecycle markers, states,
 * durations from Event.ts and token usage, and the same journal without times.
 */
import { describe, expect, it } from "vitest";
import { Lifecycle_Kind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { buildTimeline, totalTokens, usageOf } from "../../../ui/journal-model.js";
import { ev, journal } from "./records.js";

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);

/** A chat turn with a model call, a gated refund parked and later approved, then a second model call. */
const gatedTurn = [
  ev.start("e1"), // 1
  ev.input("e1", "refund order 7"), // 2
  ev.model("e1"), // 3
  ev.usage("e1", 100n, 20n), // 4
  ev.output("e1", ""), // 5 (the model asked for a tool)
  ev.tool("e1", "c1", "refund", { amount: 120 }), // 6
  ev.request("e1", "c1"), // 7
  ev.lifecycle(Lifecycle_Kind.LIFECYCLE_SUSPEND), // 8
  ev.decision("e1", "c1", true, 7n), // 9
  ev.result("e1", "c1"), // 10
  ev.model("e1"), // 11
  ev.usage("e1", 150n, 30n, 5n), // 12
  ev.output("e1", "refunded"), // 13
  ev.end("e1"), // 14
  ev.lifecycle(Lifecycle_Kind.LIFECYCLE_RESUME), // 15
];
const gatedTimes = [0, 1, 2, 1502, 1503, 1504, 1505, 1506, 60_000, 61_000, 61_001, 62_001, 62_002, 62_003, 62_004].map((d) => T0 + d);

describe("journal model", () => {
  it("buildTimeline: one turn per execution; a marker inside a turn's span joins it, one after it stands alone", () => {
    const t = buildTimeline(journal(gatedTurn));
    expect(t.turns.map((x) => [x.key, x.number, x.records.map((r) => Number(r.seq))])).toEqual([
      ["turn:e1", 1, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]],
      ["marker:15", 0, [15]],
    ]);
    expect(t.turns[0]).toMatchObject({ state: "completed", harness: "chat", input: "refund order 7", output: "refunded", modelCalls: 2, toolCalls: 1 });
  });

  it("buildTimeline: durations of the turn, each model call (until its answer) and the tool call (until its receipt) come from Event.ts", () => {
    const t = buildTimeline(journal(gatedTurn, gatedTimes));
    expect(t.timed).toBe(true);
    const turn = t.turns[0]!;
    expect(turn.endMs! - turn.startMs!).toBe(62_003);
    expect(t.timing.get(3n)?.tookMs).toBe(1500);
    expect(t.timing.get(11n)?.tookMs).toBe(1000);
    expect(t.timing.get(6n)?.tookMs).toBe(61_000 - 1504);
    expect(t.timing.get(9n)?.sincePrevMs).toBe(60_000 - 1506);
  });

  it("buildTimeline: usage is summed per model call, per turn and per session", () => {
    const two = [
      ...gatedTurn.slice(0, 14),
      ev.start("e2"),
      ev.input("e2", "thanks"),
      ev.model("e2"),
      ev.usage("e2", 7n, 3n),
      ev.output("e2", "ok"),
      ev.end("e2"),
    ];
    const t = buildTimeline(journal(two));
    expect(t.timing.get(3n)?.usage).toMatchObject({ input: 100n, output: 20n, reports: 1 });
    expect(t.timing.get(11n)?.usage).toMatchObject({ input: 150n, output: 30n, reasoning: 5n });
    expect(t.turns.map((x) => totalTokens(x.usage))).toEqual([300n, 10n]);
    expect(t.usage).toMatchObject({ input: 257n, output: 53n, reasoning: 5n, reports: 3 });
    expect(usageOf(journal(two), 14n)).toMatchObject({ input: 7n, output: 3n, reports: 1 });
  });

  it("buildTimeline: a journal without times still groups and counts, with no times or durations", () => {
    const t = buildTimeline(journal(gatedTurn));
    expect(t.timed).toBe(false);
    expect(t.turns[0]!.startMs).toBeUndefined();
    expect([...t.timing.values()].every((x) => x.atMs === undefined && x.tookMs === undefined && x.sincePrevMs === undefined)).toBe(true);
    expect(totalTokens(t.usage)).toBe(300n);
  });

  it("buildTimeline: turn states: awaiting an open gate, failed with its code, canceled, open", () => {
    const parked = buildTimeline(journal(gatedTurn.slice(0, 8))).turns;
    // The SUSPEND after the gate is outside the turn's span until the turn continues.
    expect(parked.map((x) => x.state)).toEqual(["awaiting", "completed"]);
    const failed = buildTimeline(journal([ev.start("e"), ev.input("e", "x"), ev.error("e", 13, "provider said 500")])).turns[0]!;
    expect(failed).toMatchObject({ state: "failed", errorCode: 13 });
    expect(buildTimeline(journal([ev.start("e"), ev.end("e", "CANCELED")])).turns[0]!.state).toBe("canceled");
    expect(buildTimeline(journal([ev.start("e"), ev.input("e", "x"), ev.model("e")])).turns[0]!.state).toBe("open");
  });
});
