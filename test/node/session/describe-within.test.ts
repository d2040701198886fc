/**
 * describeWithin (objects/session/placement.ts): a harness's Describe, bounded in time. A harness
 * that answers at once costs no timer; one that never answers is given up after the bound, with
 * its signal aborted.
 */
import { create } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it, vi } from "vitest";
import { describeWithin } from "../../../objects/session/placement.js";
import { HarnessDescriptorSchema } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";

type Described = Parameters<typeof describeWithin>[0];

afterEach(() => {
  vi.useRealTimers();
});

describe("describeWithin", () => {
  it("a harness that answers at once: its descriptor, and no timer left or set", async () => {
    vi.useFakeTimers();
    const answer = describeWithin(echoHarness as Described, 10_000);
    expect(vi.getTimerCount()).toBe(0);
    expect((await answer)?.id).toBe("echo");
  });

  it("an asynchronous answer within the bound: its descriptor, and the timer cleared", async () => {
    vi.useFakeTimers();
    const slow = {
      ...echoHarness,
      describe: () => new Promise((ok) => setTimeout(() => ok(create(HarnessDescriptorSchema, { id: "slow" })), 50)),
    } as unknown as Described;
    const answer = describeWithin(slow, 10_000);
    await vi.advanceTimersByTimeAsync(50);
    expect((await answer)?.id).toBe("slow");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("no answer within the bound: undefined, and the harness's signal aborted", async () => {
    vi.useFakeTimers();
    let seen: AbortSignal | undefined;
    const silent = {
      ...echoHarness,
      describe: (signal: AbortSignal) => {
        seen = signal;
        return new Promise(() => {});
      },
    } as unknown as Described;
    const answer = describeWithin(silent, 10_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await answer).toBeUndefined();
    expect(seen?.aborted).toBe(true);
  });
});
