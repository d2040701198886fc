/**
 * agentctl fork, suspend, resume, cancel and delete (docs/behaviour.md §4.7-4.9, §7.5), run in
 * process against the shared `wrangler dev` (echo harness: five records per turn). Cancel of a
 * running turn needs the test-only `hold` harness, so that block starts its own host.
 */
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Host, startHost } from "../support/host.js";
import { waitFor } from "../support/wait.js";
import { agentctl, sessionOf } from "./run-agentctl.js";

const server = inject("serverUrl");
const S = ["--server", server];
const UNKNOWN = "sess-000000000000000000000000";
const CHILD_LINE = /^child (sess-[0-9a-f]{24}) parent=(sess-[0-9a-f]{24}) fork_seq=(\d+) name=(.*)$/;

/** A two-turn echo session (seq 1-10): "hello", then "again". */
async function twoTurns(): Promise<string> {
  const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
  const r = await agentctl([...S, "exec", "--session", uid, "--input", "again"]);
  expect(r.code, r.stderr).toBe(0);
  return uid;
}

async function lastSeq(uid: string): Promise<string> {
  const r = await agentctl([...S, "--json", "get", uid]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { lastSeq?: string }).lastSeq ?? "0";
}

function children(lines: string[]): { uid: string; parent: string; forkSeq: string; name: string }[] {
  return lines.map((l) => {
    const m = CHILD_LINE.exec(l);
    if (!m) throw new Error(`not a child line: ${l}`);
    return { uid: m[1]!, parent: m[2]!, forkSeq: m[3]!, name: m[4]! };
  });
}

describe("agentctl fork", () => {
  it("fork --at 5 --count 2 --names a,b: prints two named children at fork_seq=5", async () => {
    const parent = await twoTurns();
    const r = await agentctl([...S, "fork", parent, "--at", "5", "--count", "2", "--names", "a,b"]);
    expect(r.code, r.stderr).toBe(0);
    const kids = children(r.lines);
    expect(kids.map(({ parent, forkSeq, name }) => ({ parent, forkSeq, name }))).toEqual([
      { parent, forkSeq: "5", name: "a" },
      { parent, forkSeq: "5", name: "b" },
    ]);
    expect(new Set([parent, ...kids.map((k) => k.uid)]).size).toBe(3);

    // The child's journal: the parent's first turn verbatim (same hashes), then the FORK marker.
    const replay = await agentctl([...S, "replay", kids[0]!.uid]);
    const parentReplay = await agentctl([...S, "replay", parent]);
    expect(replay.lines).toEqual([...parentReplay.lines.slice(0, 5), "seq=6  EVENT_LIFECYCLE  FORK parent@5"]);
    const childJson = (await agentctl([...S, "--json", "replay", kids[0]!.uid, "--to", "5"])).lines.map((l) => JSON.parse(l));
    const parentJson = (await agentctl([...S, "--json", "replay", parent, "--to", "5"])).lines.map((l) => JSON.parse(l));
    expect(childJson).toEqual(parentJson);
    expect(await lastSeq(parent)).toBe("10");

    const get = await agentctl([...S, "get", kids[1]!.uid]);
    expect(get.lines).toEqual(expect.arrayContaining(["name           b", "compute_state  COLD", `parent_uid     ${parent}`, "fork_seq       5"]));
  });

  it("fork: an exec on a child extends only that child", async () => {
    const parent = await twoTurns();
    const [a, b] = children((await agentctl([...S, "fork", "--session", parent, "--at", "5", "--count", "2"])).lines);
    const r = await agentctl([...S, "exec", "--session", a!.uid, "--input", "child-only turn"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines.slice(1).map((l) => l.split("  ")[0])).toEqual(["seq=7", "seq=8", "seq=9", "seq=10", "seq=11"]);
    expect(r.lines[4]).toBe("seq=10  EVENT_OUTPUT  assistant: echo:child-only turn");
    expect(await lastSeq(a!.uid)).toBe("11");
    expect(await lastSeq(b!.uid)).toBe("6");
    expect(await lastSeq(parent)).toBe("10");
  });

  it("fork: with no --at forks at the head, one unnamed child", async () => {
    const parent = await twoTurns();
    const r = await agentctl([...S, "fork", parent]);
    expect(r.code, r.stderr).toBe(0);
    expect(children(r.lines)).toEqual([{ uid: expect.any(String), parent, forkSeq: "10", name: "" }]);
  });

  it("fork --json --label: prints each child Session, labels replacing the parent's", async () => {
    const parent = sessionOf(await agentctl([...S, "create", "--label", "team=red"]));
    await agentctl([...S, "exec", "--session", parent, "--input", "hello"]);
    const r = await agentctl([...S, "--json", "fork", parent, "--names", "x,y", "--label", "branch=1"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({
        metadata: expect.objectContaining({ name: "x" }),
        parentUid: parent,
        forkSeq: "5",
        lastSeq: "6",
        labels: { branch: "1" },
        computeState: "COMPUTE_COLD",
      }),
      expect.objectContaining({
        metadata: expect.objectContaining({ name: "y" }),
        parentUid: parent,
        forkSeq: "5",
        lastSeq: "6",
        labels: { branch: "1" },
        computeState: "COMPUTE_COLD",
      }),
    ]);
  });

  it("fork --count 129: exits 1 with invalid_argument and creates nothing", async () => {
    const parent = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "fork", parent, "--count", "129"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl fork: invalid_argument: .*128/);
    expect(r.stdout).toBe("");
  });

  it("fork --names: a name count that does not match --count exits 2 and says so", async () => {
    const r = await agentctl([...S, "fork", UNKNOWN, "--count", "2", "--names", "only-one"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^agentctl fork: --names gives 1 name for 2 children: give exactly one per child\n/);
    expect(r.stdout).toBe("");
  });

  it("fork --at: past the parent's head exits 1 with invalid_argument", async () => {
    const parent = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "fork", parent, "--at", "6"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl fork: invalid_argument: /);
  });

  it("fork: an unknown session exits 1 with not_found", async () => {
    const r = await agentctl([...S, "fork", UNKNOWN]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl fork: not_found: /);
  });
});

describe("agentctl suspend and resume", () => {
  it("suspend, resume: print COLD then LIVE, last_seq counting each marker", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "before suspend"]));
    const s = await agentctl([...S, "suspend", uid]);
    expect(s.code, s.stderr).toBe(0);
    expect(s.lines).toEqual([`session ${uid} suspend compute=COLD last_seq=6`]);
    const r = await agentctl([...S, "resume", uid]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines).toEqual([`session ${uid} resume compute=LIVE last_seq=7`]);
    const replay = await agentctl([...S, "replay", uid, "--from", "6"]);
    expect(replay.lines).toEqual([`seq=6  EVENT_LIFECYCLE  SUSPEND snapshot=${uid}`, "seq=7  EVENT_LIFECYCLE  RESUME"]);
  });

  it("suspend --json: prints the Session with compute COLD", async () => {
    const uid = sessionOf(await agentctl([...S, "create"]));
    const r = await agentctl([...S, "--json", "suspend", uid]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ metadata: { uid }, lastSeq: "1", computeState: "COMPUTE_COLD" });
  });

  it("suspend: an unknown session exits 1 with not_found", async () => {
    const r = await agentctl([...S, "suspend", UNKNOWN]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl suspend: not_found: /);
  });
});

describe("agentctl cancel", () => {
  it("cancel: with nothing running exits 1 with failed_precondition and writes nothing", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "cancel", uid]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl cancel: failed_precondition: /);
    expect(r.stdout).toBe("");
    expect(await lastSeq(uid)).toBe("5");
  });

  it("cancel --reason: an unknown reason exits 2 before any request", async () => {
    const r = await agentctl([...S, "cancel", UNKNOWN, "--reason", "bored"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^agentctl cancel: --reason must be one of USER, TIMEOUT, INTERNAL/);
  });
});

describe("agentctl delete", () => {
  it("delete: prints what was deleted; afterwards get, replay and verify exit 1 with not_found", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const d = await agentctl([...S, "delete", uid]);
    expect(d.code, d.stderr).toBe(0);
    expect(d.lines).toEqual([`deleted ${uid} last_seq=5`]);
    for (const cmd of ["get", "replay"]) {
      const r = await agentctl([...S, cmd, uid]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^agentctl ${cmd}: not_found: `));
    }
    // verify surfaces the host's tombstone: when, and the final head.
    const v = await agentctl([...S, "verify", uid]);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(/^agentctl verify: not_found: .*deleted.*seq 5/);
    const again = await agentctl([...S, "delete", uid]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^agentctl delete: not_found: /);
  });

  it("delete --json: prints the final Session; the parent's forked children survive", async () => {
    const parent = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const [child] = children((await agentctl([...S, "fork", parent])).lines);
    const d = await agentctl([...S, "--json", "delete", parent]);
    expect(d.code, d.stderr).toBe(0);
    expect(JSON.parse(d.stdout)).toMatchObject({ metadata: { uid: parent }, lastSeq: "5" });
    const replay = await agentctl([...S, "replay", child!.uid]);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.lines.at(-1)).toBe("seq=6  EVENT_LIFECYCLE  FORK parent@5");
  });
});

/** A running turn: the `hold` harness waits on a GET that this server never answers. */
describe("agentctl cancel of a running turn", () => {
  let host: Host;
  let gate: Server;
  let held = 0;
  let dir: string;
  let configFile: string;

  beforeAll(async () => {
    gate = createServer(() => void held++);
    await new Promise<void>((ok) => gate.listen(0, "127.0.0.1", ok));
    const port = (gate.address() as { port: number }).port;
    dir = mkdtempSync(join(tmpdir(), "agentctl-cancel-"));
    configFile = join(dir, "hold.json");
    writeFileSync(configFile, JSON.stringify({ hold_url: `http://127.0.0.1:${port}/hold` }));
    host = await startHost({ vars: { TEST_HARNESSES: "1" } });
  });

  afterAll(async () => {
    await host?.stop();
    gate?.closeAllConnections();
    gate?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("cancel: stops the running turn, which ends canceled with END CANCELED and CANCEL <reason>", async () => {
    const H = ["--server", host.url];
    const uid = sessionOf(await agentctl([...H, "create", "--harness", "hold"]));
    const before = held;
    const turn = agentctl([...H, "exec", "--session", uid, "--input", "wait", "--config-file", configFile]);
    await waitFor("the hold harness to reach its gate", () => held > before);

    const busy = await agentctl([...H, "suspend", uid]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/^agentctl suspend: aborted: /);
    const wrong = await agentctl([...H, "cancel", uid, "--execution", "not-this-one"]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^agentctl cancel: failed_precondition: /);

    const c = await agentctl([...H, "cancel", uid, "--reason", "timeout"]);
    expect(c.code, c.stderr).toBe(0);
    expect(c.lines).toEqual([`session ${uid} cancel exec=CANCELED last_seq=6`]);
    const t = await turn;
    expect(t.code).toBe(1);
    expect(t.lines[0]).toBe(`session ${uid}`);
    expect(t.stderr).toMatch(/^agentctl exec: canceled: /);
    const replay = await agentctl([...H, "replay", uid, "--from", "5"]);
    expect(replay.lines).toEqual(["seq=5  EVENT_END  state=CANCELED", "seq=6  EVENT_LIFECYCLE  CANCEL TIMEOUT"]);
  });
});
