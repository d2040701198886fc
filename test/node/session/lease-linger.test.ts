/**
 * A turn's execution slot kept for the session's next turn (objects/session/state.ts lease and
 * release, ExecutionLeases.lingerMs): back-to-back turns ask the tenant's limiter once; the slot
 * goes back after the linger, at once when the tenant is over half full or the limiter asked about
 * it during the turn, and the moment the limiter asks about it while it lingers.
 */
import { describe, expect, it } from "vitest";
import type { ExecutionLeases } from "../../../objects/session/state.js";
import { userText } from "../../../proto/messages.js";
import { createSession, drain, execReq, gatedHarness, setup } from "../support/session-fixture.js";
import { waitFor } from "../support/wait.js";

/** A limiter stand-in: it records every call and answers with `running` slots taken. */
function fakeLeases(o: { running: number; limit: number; lingerMs: number }) {
  const calls: string[] = [];
  const owners: string[] = [];
  const leases: ExecutionLeases = {
    acquire: async (_t, _u, owner) => {
      calls.push("acquire");
      owners.push(owner);
      return { ok: true, running: o.running };
    },
    release: async (_t, _u, owner) => {
      calls.push(`release ${owner === owners.at(-1) ? "last" : owner}`);
    },
    limit: o.limit,
    lingerMs: o.lingerMs,
  };
  return { leases, calls, owners };
}

const turn = async (host: ReturnType<typeof setup>["host"], text: string) => {
  const r = await drain(host.exec(execReq({ inputs: [userText(text)] })));
  expect(r.failure).toBeUndefined();
};

describe("execution slots kept between turns", () => {
  it("lease: three turns back to back take one slot; it goes back once the linger passes", async () => {
    const f = fakeLeases({ running: 1, limit: 8, lingerMs: 40 });
    const { host } = setup({}, undefined, { leases: f.leases });
    await createSession(host);
    await turn(host, "one");
    await turn(host, "two");
    await turn(host, "three");
    expect(f.calls).toEqual(["acquire"]);
    await waitFor("the kept slot given back", () => f.calls.length === 2);
    expect(f.calls).toEqual(["acquire", "release last"]);
    // The next turn asks the limiter again.
    await turn(host, "four");
    expect(f.calls).toEqual(["acquire", "release last", "acquire"]);
  });

  it("lease: over half the limit, the slot goes back as the turn ends", async () => {
    const f = fakeLeases({ running: 5, limit: 8, lingerMs: 10_000 });
    const { host } = setup({}, undefined, { leases: f.leases });
    await createSession(host);
    await turn(host, "one");
    await waitFor("the slot given back", () => f.calls.length === 2);
    await turn(host, "two");
    await waitFor("given back again", () => f.calls.length === 4);
    expect(f.calls).toEqual(["acquire", "release last", "acquire", "release last"]);
  });

  it("lease: the limiter asking about a kept slot gets 'not running' and the slot is gone (the next turn asks again)", async () => {
    const f = fakeLeases({ running: 1, limit: 8, lingerMs: 10_000 });
    const { host } = setup({}, undefined, { leases: f.leases });
    await createSession(host);
    await turn(host, "one");
    expect(host.runs(f.owners[0]!)).toBe(false);
    await turn(host, "two");
    // No release of the dropped slot (the limiter dropped the row itself), and a fresh acquire.
    expect(f.calls).toEqual(["acquire", "acquire"]);
    expect(f.owners[1]).not.toBe(f.owners[0]);
  });

  it("lease: a slot the limiter asked about during its turn is given back as the turn ends, not kept", async () => {
    const g = gatedHarness();
    const f = fakeLeases({ running: 1, limit: 8, lingerMs: 10_000 });
    const { host } = setup({ gated: g.harness }, undefined, { leases: f.leases });
    await createSession(host, "gated");
    const running = drain(host.exec(execReq({ inputs: [userText("x")] })));
    await g.started;
    expect(host.runs(f.owners[0]!)).toBe(true);
    g.release();
    expect((await running).failure).toBeUndefined();
    await waitFor("the slot given back", () => f.calls.length === 2);
    expect(f.calls).toEqual(["acquire", "release last"]);
  });
});
