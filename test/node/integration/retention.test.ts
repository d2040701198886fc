/**
 * Retention (docs/retention.md) against a real `wrangler dev`, through `agentctl retention`: a dry
 * run lists exactly the idle sessions and deletes nothing; the policy then deletes them with
 * tombstones, in batches across several alarm runs, keeping the latest K; other projects are
 * untouched; bad input fails with INVALID_ARGUMENT and a message that says what to give.
 *
 * A retention "day" is RETENTION_DAY_SECONDS (10 s here) so sessions can be idle within a test;
 * the fresh sessions are created just before the policy and stay fresh for that long.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sleep } from "../../../scripts/dev-server.js";
import { agentctl } from "../cli/run-agentctl.js";
import { startHost, type Host } from "../support/host.js";

const DAY_SECONDS = 10;
let host: Host;

beforeAll(async () => {
  host = await startHost({ vars: { RETENTION_DAY_SECONDS: String(DAY_SECONDS), RETENTION_BATCH: "2" } });
});

afterAll(async () => {
  await host?.stop();
});

async function listed(project: string): Promise<string[]> {
  const out: string[] = [];
  for await (const s of host.client.list({ project })) out.push(s.metadata!.uid);
  return out.sort();
}

async function until(what: string, cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await cond()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const cli = (args: string[]) => agentctl(["--server", host.url, ...args]);

describe("retention through a real host", () => {
  it("retention set: a dry run lists the idle sessions; the policy deletes them in batches across alarm runs, keeps the latest K, leaves other projects alone", async () => {
    const old: string[] = [];
    for (let i = 0; i < 5; i++) old.push((await host.client.create({ project: "ret-a", name: `old-${i}` })).metadata!.uid);
    await host.client.exec({ session: old[4]!, inputs: ["the last old one had a turn"] });
    const otherProject = (await host.client.create({ project: "ret-b" })).metadata!.uid;
    const idleSince = Date.now();
    // Waiting for the sessions to be idle for one retention day is the condition itself.
    await until("a retention day to pass", async () => Date.now() > idleSince + (DAY_SECONDS + 1) * 1000);
    const fresh = [(await host.client.create({ project: "ret-a" })).metadata!.uid, (await host.client.create({ project: "ret-a" })).metadata!.uid];

    const dry = await cli(["retention", "set", "--project", "ret-a", "--days", "1", "--keep-latest", "1", "--dry-run", "--json"]);
    expect(dry.code).toBe(0);
    const listedDry = (JSON.parse(dry.lines[0]!) as { wouldDelete?: { uid: string }[] }).wouldDelete?.map((c) => c.uid) ?? [];
    expect([...listedDry].sort()).toEqual([...old].sort());
    // The last old session changed last (its turn), so it is listed last: oldest activity first.
    expect(listedDry.at(-1)).toBe(old[4]);
    expect(await listed("ret-a")).toEqual([...old, ...fresh].sort());
    expect((await host.client.getRetention("ret-a")).policy?.days ?? 0).toBe(0);

    const set = await cli(["retention", "set", "--project", "ret-a", "--days", "1", "--keep-latest", "1"]);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain("sessions idle over 1 days will be deleted, keeping the latest 1");
    await until("the idle sessions to be deleted", async () => (await listed("ret-a")).length === fresh.length);
    expect(await listed("ret-a")).toEqual([...fresh].sort());
    expect(await listed("ret-b")).toEqual([otherProject]);

    const status = await host.client.getRetention("ret-a");
    expect(status.policy).toMatchObject({ project: "ret-a", days: 1, keepLatest: 1 });
    expect(status.deleted).toBe(5n);
    // Batches of 2: five deletions took at least three alarm runs.
    expect(status.sweeps).toBeGreaterThanOrEqual(3n);
    // Deleted as DeleteSession deletes: gone, with a tombstone that names the final head.
    const gone = await host.client.get(old[4]!).catch((e) => ConnectError.from(e));
    expect((gone as ConnectError).code).toBe(Code.NotFound);
    const verified = await host.client.verify(old[4]!).catch((e) => ConnectError.from(e));
    expect((verified as ConnectError).rawMessage).toMatch(/was deleted at .*its final head was seq [1-9]/);

    const shown = await cli(["retention", "get", "--project", "ret-a"]);
    expect(shown.stdout).toContain("project ret-a: delete sessions idle over 1 days, keep the latest 1; deleted so far 5");
    const cleared = await cli(["retention", "clear", "--project", "ret-a"]);
    expect(cleared.stdout).toContain("retention policy cleared");
    expect((await host.client.getRetention("ret-a")).policy?.days ?? 0).toBe(0);
  });

  it("retention set: bad input fails INVALID_ARGUMENT (or a usage error) with what to give instead", async () => {
    const noDays = await cli(["retention", "set", "--project", "p"]);
    expect(noDays.code).not.toBe(0);
    expect(noDays.stderr).toContain("retention set needs --days");
    const negative = await cli(["retention", "set", "--project", "p", "--days", "-3"]);
    expect(negative.code).not.toBe(0);
    expect(negative.stderr).toContain("--days must be a whole number of at least 1");
    const tooMany = await host.client.setRetention({ project: "p", days: 40_000 }).catch((e) => ConnectError.from(e));
    expect((tooMany as ConnectError).code).toBe(Code.InvalidArgument);
    expect((tooMany as ConnectError).rawMessage).toContain("policy.days must be a whole number of days from 1 to 36500");
    const noProject = await host.client.setRetention({ project: "", days: 3 }).catch((e) => ConnectError.from(e));
    expect((noProject as ConnectError).code).toBe(Code.InvalidArgument);
    expect((noProject as ConnectError).rawMessage).toContain("give the project");
  });
});
