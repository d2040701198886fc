/**
 * agentctl resume, verify --replay and the inputless exec against the shared `wrangler dev`
 * (echo harness, no model provider): Resume journals exactly one LIFECYCLE(RESUME) marker on a
 * finished session, Audit.Verify re-produces every output with zero model calls, and an inputless
 * exec on a finished session is a new turn with input_count 0.
 */
import { describe, expect, inject, it } from "vitest";
import { agentctl, sessionOf } from "./run-agentctl.js";

const server = inject("serverUrl");
const S = ["--server", server];
const UNKNOWN = "sess-000000000000000000000000";

describe("agentctl resume", () => {
  it("resume: on a completed echo session appends one LIFECYCLE record and reports compute LIVE", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "resume", uid]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines).toEqual([`session ${uid} resume compute=LIVE last_seq=6`]);
    const replay = await agentctl([...S, "replay", uid]);
    expect(replay.lines.slice(5)).toEqual(["seq=6  EVENT_LIFECYCLE  RESUME"]);
    expect(replay.lines.filter((l) => l.includes("EVENT_LIFECYCLE")).length).toBe(1);
  });

  it("resume --json: prints the Session as proto3-JSON", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "--json", "resume", "--session", uid]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ metadata: { uid }, lastSeq: "6", computeState: "COMPUTE_LIVE" });
  });

  it("resume: an unknown session exits 1 with not_found", async () => {
    const r = await agentctl([...S, "resume", UNKNOWN]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl resume: not_found: /);
    expect(r.stdout).toBe("");
  });
});

describe("agentctl verify --replay", () => {
  it("verify --replay: an echo session re-produces its outputs with 0 model calls", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    await agentctl([...S, "exec", "--session", uid, "--input", "again"]);
    const r = await agentctl([...S, "verify", "--session", uid, "--replay"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines).toEqual([
      expect.stringMatching(/^VERIFIED 10 records head=[0-9a-f]{64}$/),
      "REPLAYED 2 outputs, 0 model calls",
      '  output 1: "echo:hello"',
      '  output 2: "echo:again"',
    ]);
    const j = await agentctl([...S, "--json", "verify", uid, "--replay"]);
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toMatchObject({
      session: uid,
      ok: true,
      records: "10",
      server: { chainOk: true, records: "10" },
      replay: { ok: true, outputs: ["echo:hello", "echo:again"], modelCalls: "0", divergence: "" },
    });
  });

  it("verify --replay: an unknown session exits 1 with not_found", async () => {
    const r = await agentctl([...S, "verify", UNKNOWN, "--replay"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl verify: not_found: /);
  });
});

describe("agentctl exec without --input", () => {
  it("exec --session: on a completed session runs a new turn with input_count 0", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "exec", "--session", uid]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines[0]).toBe(`session ${uid}`);
    expect(r.lines[1]).toBe("seq=6  EVENT_EXECUTION_START  harness=echo inputs=0");
    expect(r.lines.at(-1)).toBe(`seq=${r.lines.length + 4}  EVENT_END  state=COMPLETED`);
    expect(r.lines.filter((l) => l.includes("EVENT_INPUT"))).toEqual([]);
  });

  it("exec --session: an unknown session exits 1 with not_found", async () => {
    const r = await agentctl([...S, "exec", "--session", UNKNOWN]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl exec: not_found: /);
  });
});
