/**
 * When a session reports to its Directory (objects/session/directory-reports.ts): quiet changes
 * each report their exact state before they answer; a burst makes the row live once, before it
 * writes, is refreshed at most once a window and settles once quiet. First the policy alone on a
 * fake clock, then a SessionHost running real turns (its reports recorded by the fixture).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ExecState, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { decodeBinary } from "../../../proto/binary-reader.js";
import { userText } from "../../../proto/messages.js";
import { DirectoryReports } from "../../../objects/session/directory-reports.js";
import { createSession, drain, execReq, gatedHarness, setup } from "../support/session-fixture.js";

describe("DirectoryReports (fake clock)", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** `deliver` runs as the Directory takes a report (a throw refuses it); `sent` lists those taken. */
  function reporter(o: { deliver?: (live: boolean) => unknown; busy?: () => boolean; exists?: () => boolean; burstMs?: number; refreshMs?: number } = {}) {
    const sent: boolean[] = [];
    const r = new DirectoryReports({
      send: async (live) => {
        await o.deliver?.(live);
        sent.push(live);
      },
      busy: o.busy ?? (() => false),
      exists: o.exists ?? (() => true),
      burstMs: o.burstMs ?? 1000,
      refreshMs: o.refreshMs,
    });
    const change = async () => {
      await r.beforeChange();
      await r.afterChange();
    };
    return { r, sent, change };
  }

  it("quiet changes: each is reported, exact (not live), before it answers", async () => {
    const { r, sent, change } = reporter();
    await change();
    expect(sent).toEqual([false]);
    await vi.advanceTimersByTimeAsync(1000);
    await change();
    expect(sent).toEqual([false, false]);
    expect(r.live).toBe(false);
  });

  it("a burst: the second change marks the row live before it writes, later changes report nothing, a refresh carries them", async () => {
    const { r, sent, change } = reporter();
    await change();
    await vi.advanceTimersByTimeAsync(10);
    await r.beforeChange();
    // Sent before the change's own write: a crash from here on leaves the row live.
    expect(sent).toEqual([false, true]);
    await r.afterChange();
    for (let i = 0; i < 20; i++) {
      await vi.advanceTimersByTimeAsync(10);
      await change();
    }
    expect(sent).toEqual([false, true]);
    expect(r.live).toBe(true);
    // A refresh a second after the first change it had not reported, with all of them.
    await vi.advanceTimersByTimeAsync(799);
    expect(sent).toEqual([false, true]);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toEqual([false, true, true]);
    // Nothing changed since: no timer, no report, however long it stays quiet.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sent).toEqual([false, true, true]);
    expect(r.live).toBe(true);
    // The listing that asks after the quiet window settles it, exact; the next change is quiet.
    r.listed();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([false, true, true, false]);
    expect(r.live).toBe(false);
    await change();
    expect(sent).toEqual([false, true, true, false, false]);
  });

  it("a chat's messages seconds apart: one live mark, then each refreshed a second after it, off its path", async () => {
    const { r, sent, change } = reporter({ burstMs: 10_000, refreshMs: 1000 });
    await change();
    expect(sent).toEqual([false]);
    await vi.advanceTimersByTimeAsync(3000);
    await r.beforeChange();
    expect(sent).toEqual([false, true]);
    await r.afterChange();
    await vi.advanceTimersByTimeAsync(999);
    expect(sent).toEqual([false, true]);
    await vi.advanceTimersByTimeAsync(1);
    // The refresh carries the change: the anchored head trails it by a second at most.
    expect(sent).toEqual([false, true, true]);
    for (let i = 0; i < 3; i++) {
      await vi.advanceTimersByTimeAsync(3000);
      await change();
      // Nothing before the change answers...
      expect(sent).toHaveLength(3 + i);
      await vi.advanceTimersByTimeAsync(1000);
      // ...and its refresh a second later.
      expect(sent).toHaveLength(4 + i);
    }
    expect(sent.slice(3)).toEqual([true, true, true]);
    // A listing within the window leaves the row live; one after it settles the row.
    r.listed();
    await vi.advanceTimersByTimeAsync(8999);
    expect(sent).toHaveLength(6);
    expect(r.live).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    r.listed();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([false, true, true, true, true, true, false]);
    expect(r.live).toBe(false);
  });

  it("a live mark the Directory refused is forgotten: the change is then reported exactly", async () => {
    const { r, sent, change } = reporter({
      deliver: (live) => {
        if (live) throw new Error("directory unavailable");
      },
    });
    await change();
    await r.beforeChange();
    expect(r.live).toBe(false);
    await r.afterChange();
    expect(sent).toEqual([false, false]);
  });

  it("listed: a row this instance does not keep live is settled; one in its burst window, or under a running operation, is left", async () => {
    let busy = false;
    const { r, sent, change } = reporter({ busy: () => busy });
    // Live by an earlier instance's doing: this one settles it.
    r.listed();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([false]);
    await change();
    await change();
    expect(r.live).toBe(true);
    r.listed();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([false, false, true]);
    // The refresh of the second change.
    await vi.advanceTimersByTimeAsync(1000);
    expect(sent).toEqual([false, false, true, true]);
    busy = true;
    r.listed();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([false, false, true, true]);
    expect(r.live).toBe(true);
    busy = false;
    r.listed();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([false, false, true, true, false]);
    expect(r.live).toBe(false);
  });

  it("reports leave one at a time, in the order they were made", async () => {
    const order: string[] = [];
    let releaseFirst!: () => void;
    const first = new Promise<void>((ok) => (releaseFirst = ok));
    let n = 0;
    const { r } = reporter({
      deliver: async (live) => {
        const i = n++;
        order.push(`start ${i} ${live}`);
        if (i === 0) await first;
        order.push(`end ${i}`);
      },
    });
    const a = r.afterChange();
    const b = r.beforeChange();
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual(["start 0 false"]);
    releaseFirst();
    await Promise.all([a, b]);
    expect(order).toEqual(["start 0 false", "end 0", "start 1 true", "end 1"]);
  });

  it("a deleted session reports nothing more, and its burst ends quietly", async () => {
    let exists = true;
    const { r, sent, change } = reporter({ exists: () => exists });
    await change();
    await change();
    exists = false;
    await change();
    await vi.advanceTimersByTimeAsync(5000);
    expect(sent).toEqual([false, true]);
    expect(r.live).toBe(false);
  });
});

describe("SessionHost's Directory reports", () => {
  const stateOf = (session: Uint8Array) => decodeBinary(SessionSchema, session).execState;

  it("exec: turns back to back cost one live mark, then no report each; a refresh brings the row to the head, a later listing settles it", async () => {
    const { host, reports } = setup({}, undefined, { directoryBurstMs: 150 });
    await createSession(host);
    await drain(host.exec(execReq({ inputs: [userText("first")] })));
    expect(reports.map((r) => [r.headSeq, !!r.live])).toEqual([
      [0, false],
      [5, false],
    ]);
    for (let i = 0; i < 10; i++) expect((await drain(host.exec(execReq({ inputs: [userText(`turn ${i}`)] })))).failure).toBeUndefined();
    // The live mark went out before the second turn wrote: the head it carries is the first turn's.
    expect(reports.slice(2, 3).map((r) => [r.headSeq, !!r.live, stateOf(r.session)])).toEqual([[5, true, ExecState.EXEC_RUNNING]]);
    // The listing's answer for the live row is the session now; asked within the window, it stays live.
    const now = host.listing();
    expect(now.ok && now.value).toMatchObject({ lastSeq: 55n, execState: ExecState.EXEC_COMPLETED });
    // Refreshed (still live) to the head after the last turn.
    await waitFor(() => reports[reports.length - 1]!.headSeq === 55);
    expect(reports.slice(2).every((r) => r.live)).toBe(true);
    const refreshed = reports.length;
    // Quiet for the window: nothing more is sent until a listing asks, and that one settles it.
    await new Promise((ok) => setTimeout(ok, 200));
    expect(reports).toHaveLength(refreshed);
    host.listing();
    await waitFor(() => reports.length > refreshed);
    const settled = reports[reports.length - 1]!;
    expect([settled.headSeq, !!settled.live, stateOf(settled.session)]).toEqual([55, false, ExecState.EXEC_COMPLETED]);
  });

  it("exec: a gated turn in a burst is listed as RUNNING through its live row, and reports nothing while it runs", async () => {
    const g = gatedHarness();
    const { host, reports } = setup({ gated: g.harness }, undefined, { directoryBurstMs: 60_000, runningReportMs: 10 });
    await createSession(host);
    await drain(host.exec(execReq({ inputs: [userText("first")] })));
    const long = host.exec(execReq({ inputs: [userText("slow")], harness: "gated" }));
    await g.started;
    const marked = reports.length;
    await new Promise((ok) => setTimeout(ok, 50));
    expect(reports.length).toBe(marked);
    expect(reports[marked - 1]!.live).toBe(true);
    const now = host.listing();
    expect(now.ok && now.value.execState).toBe(ExecState.EXEC_RUNNING);
    g.release();
    expect((await drain(long)).failure).toBeUndefined();
    expect(reports.length).toBe(marked);
  });
});

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((ok) => setTimeout(ok, 25));
  expect(cond()).toBe(true);
}
