/**
 * A turn's execution slot kept for the session's next turn (objects/session/state.ts lease and
 * release, ExecutionLeases.keep): turns ask the tenant's limiter once, however far apart, and the
 * limiter is told once that the slot is kept; nothing gives it back by time. It goes back at once
 * when the tenant is over half full or the limiter asked about it during the turn, the moment the
 * limiter asks about it while it is kept, and when the session is deleted.
 */
import { describe, expect, it } from "vitest";
import type { ExecutionLeases } from "../../../objects/session/state.js";
import { userText } from "../../../proto/messages.js";
import { createSession, drain, execReq, gatedHarness, setup } from "../support/session-fixture.js";
import { waitFor } from "../support/wait.js";

/** A limiter stand-in: it records every call and answers with `running` slots taken. */
function fakeLeases(o: { running: number; limit: number; keep?: boolean }) {
  const calls: string[] = [];
  const owners: string[] = [];
  const name = (owner: string) => (owner === owners.at(-1) ? "last" : owner);
  const leases: ExecutionLeases = {
    acquire: async (_t, _u, owner) => {
      calls.push("acquire");
      owners.push(owner);
      return { ok: true, running: o.running };
    },
    release: async (_t, _u, owner) => {
      calls.push(`release ${name(owner)}`);
    },
    keep:
      o.keep === false
        ? undefined
        : async (_t, _u, owner) => {
            calls.push(`keep ${name(owner)}`);
          },
    limit: o.limit,
  };
  return { leases, calls, owners };
}

const turn = async (host: ReturnType<typeof setup>["host"], text: string) => {
  const r = await drain(host.exec(execReq({ inputs: [userText(text)] })));
  expect(r.failure).toBeUndefined();
};

/** A session on a limiter stand-in, created (with the built-in echo harness unless `extra` names another). */
async function sessionOn(o: Parameters<typeof fakeLeases>[0], extra: Parameters<typeof setup>[0] = {}, harness?: string) {
  const f = fakeLeases(o);
  const { host } = setup(extra, undefined, { leases: f.leases });
  await createSession(host, harness);
  return { f, host };
}

/** Long enough for a timer that gave the slot back to have fired. */
const pause = () => new Promise((ok) => setTimeout(ok, 60));

describe("execution slots kept between turns", () => {
  it("lease: turns take one slot however far apart; the limiter hears once that it is kept, and nothing gives it back", async () => {
    const { f, host } = await sessionOn({ running: 1, limit: 8 });
    await turn(host, "one");
    await turn(host, "two");
    await pause();
    await turn(host, "three");
    await pause();
    expect(f.calls).toEqual(["acquire", "keep last"]);
  });

  it("lease: over half the limit, the slot goes back as the turn ends", async () => {
    const { f, host } = await sessionOn({ running: 5, limit: 8 });
    await turn(host, "one");
    await waitFor("the slot given back", () => f.calls.length === 2);
    await turn(host, "two");
    await waitFor("given back again", () => f.calls.length === 4);
    expect(f.calls).toEqual(["acquire", "release last", "acquire", "release last"]);
  });

  it("lease: without a way to tell the limiter, every slot goes back as its turn ends", async () => {
    const { f, host } = await sessionOn({ running: 1, limit: 8, keep: false });
    await turn(host, "one");
    await waitFor("the slot given back", () => f.calls.length === 2);
    expect(f.calls).toEqual(["acquire", "release last"]);
  });

  it("lease: the limiter asking about a kept slot gets 'not running' and the slot is gone (the next turn asks again, and keeps the new one)", async () => {
    const { f, host } = await sessionOn({ running: 1, limit: 8 });
    await turn(host, "one");
    expect(host.runs(f.owners[0]!)).toBe(false);
    await turn(host, "two");
    // No release of the dropped slot (the limiter dropped the row itself), and a fresh acquire.
    expect(f.calls).toEqual(["acquire", "keep last", "acquire", "keep last"]);
    expect(f.owners[1]).not.toBe(f.owners[0]);
  });

  it("lease: a slot the limiter asked about during its turn is given back as the turn ends, not kept", async () => {
    const g = gatedHarness();
    const { f, host } = await sessionOn({ running: 1, limit: 8 }, { gated: g.harness }, "gated");
    const running = drain(host.exec(execReq({ inputs: [userText("x")] })));
    await g.started;
    expect(host.runs(f.owners[0]!)).toBe(true);
    g.release();
    expect((await running).failure).toBeUndefined();
    await waitFor("the slot given back", () => f.calls.length === 2);
    expect(f.calls).toEqual(["acquire", "release last"]);
  });

  it("lease: deleting the session gives its kept slot back", async () => {
    const { f, host } = await sessionOn({ running: 1, limit: 8 });
    await turn(host, "one");
    const deleted = await host.delete(async () => undefined);
    expect(deleted.ok).toBe(true);
    await waitFor("the kept slot given back", () => f.calls.length === 3);
    expect(f.calls).toEqual(["acquire", "keep last", "release last"]);
  });
});
