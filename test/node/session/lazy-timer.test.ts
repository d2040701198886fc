/**
 * objects/lazy-timer.ts under vitest's fake clock: it fires at its due time and never before,
 * follows a due time that moves later or earlier, fires nothing once cleared, and keeps at most
 * one platform timer however often it is set and cleared (the per-turn pattern it exists for).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LazyTimer } from "../../../objects/lazy-timer.js";

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

function counted(): { timer: LazyTimer; fired: number[] } {
  const fired: number[] = [];
  return { timer: new LazyTimer(() => fired.push(Date.now())), fired };
}

describe("LazyTimer", () => {
  it("fires once at its due time, not before", () => {
    const { timer, fired } = counted();
    timer.set(Date.now() + 100);
    vi.advanceTimersByTime(99);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([1_000_100]);
    vi.advanceTimersByTime(10_000);
    expect(fired).toHaveLength(1);
  });

  it("a due time moved later fires then, not at the first one; moved earlier, at the earlier", () => {
    const { timer, fired } = counted();
    timer.set(Date.now() + 100);
    vi.advanceTimersByTime(60);
    timer.set(Date.now() + 100);
    vi.advanceTimersByTime(99);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([1_000_160]);

    timer.set(Date.now() + 500);
    timer.set(Date.now() + 50);
    vi.advanceTimersByTime(50);
    expect(fired).toEqual([1_000_160, 1_000_210]);
    vi.advanceTimersByTime(1_000);
    expect(fired).toHaveLength(2);
  });

  it("cleared, nothing fires; set again, it fires at the new due time", () => {
    const { timer, fired } = counted();
    timer.set(Date.now() + 100);
    timer.clear();
    vi.advanceTimersByTime(1_000);
    expect(fired).toEqual([]);
    timer.set(Date.now() + 30);
    vi.advanceTimersByTime(30);
    expect(fired).toEqual([1_001_030]);
  });

  it("set and cleared every few ms (a turn each), it keeps one platform timer and fires only after the last", () => {
    const { timer, fired } = counted();
    const spy = vi.spyOn(globalThis, "setTimeout");
    for (let turn = 0; turn < 200; turn++) {
      timer.set(Date.now() + 1_000);
      vi.advanceTimersByTime(4);
      timer.clear();
      vi.advanceTimersByTime(1);
      expect(vi.getTimerCount()).toBeLessThanOrEqual(1);
    }
    // 200 turns over a second: the first timer, then one re-arm when it found the due time moved.
    expect(spy.mock.calls.length).toBeLessThanOrEqual(2);
    spy.mockRestore();
    timer.set(Date.now() + 1_000);
    vi.advanceTimersByTime(999);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toHaveLength(1);
  });
});
