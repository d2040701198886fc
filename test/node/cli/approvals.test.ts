/**
 * agentctl approve and deny (docs/behaviour.md §4.11) against servers of their own with the test-only
 * `tools` harness (TEST_HARNESSES=1), whose execution config makes one REQUIRES_APPROVAL call
 * `pay`. One server has a real HTTP stand-in executor (test/node/support/fake-executor.ts) that
 * counts effects per Idempotency-Key; the other has no TOOL_EXECUTOR_URL, so the Resume after an
 * approval fails while the decision stays committed (until that server restarts with an executor).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";
import { type Host, startHost } from "../support/host.js";
import { agentctl, sessionOf } from "./run-agentctl.js";

let executor: FakeExecutor;
let server: Host;
let bare: Host;
let dir = "";
let config = "";

beforeAll(async () => {
  executor = await startFakeExecutor();
  [server, bare] = await Promise.all([
    startHost({ vars: { TEST_HARNESSES: "1", TOOL_EXECUTOR_URL: executor.url } }),
    startHost({ vars: { TEST_HARNESSES: "1" } }),
  ]);
  dir = mkdtempSync(join(tmpdir(), "agentctl-approvals-"));
  config = join(dir, "pay.json");
  writeFileSync(config, JSON.stringify({ calls: [{ id: "g1", tool: "pay", args: { amount: 10 }, mediation: "REQUIRES_APPROVAL" }] }));
});

afterAll(async () => {
  await Promise.all([server?.stop(), bare?.stop()]);
  // The restarted bare server was handed its storage, so it does not own it.
  if (bare) rmSync(bare.server.persistDir, { recursive: true, force: true });
  await executor?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The records every parked `pay` turn starts with (seq 1-5). */
function parkedPrefix(uid: string): string[] {
  return [
    "seq=1  EVENT_EXECUTION_START  harness=tools inputs=1 config=89B",
    "seq=2  EVENT_INPUT  user: pay",
    "seq=3  EVENT_TOOL_CALL  pay id=g1",
    "seq=4  EVENT_APPROVAL_REQUEST  tool_call_id=g1",
    `seq=5  EVENT_LIFECYCLE  SUSPEND snapshot=${uid}`,
  ];
}

/** A new session whose first turn parked on the gated `pay` call (APPROVAL_REQUEST at seq 4). */
async function parked(on: Host = server): Promise<string> {
  const r = await agentctl(["--server", on.url, "exec", "--harness", "tools", "--config-file", config, "--input", "pay"]);
  expect(r.code, r.stderr).toBe(0);
  return sessionOf(r);
}

async function pending(on: Host, uid: string): Promise<{ executionId: string; toolCallId: string; requestSeq: string } | undefined> {
  const r = await agentctl(["--server", on.url, "--json", "get", uid]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { pendingApproval?: { executionId: string; toolCallId: string; requestSeq: string } }).pendingApproval;
}

async function replay(on: Host, uid: string): Promise<string[]> {
  const r = await agentctl(["--server", on.url, "replay", uid]);
  expect(r.code, r.stderr).toBe(0);
  return r.lines;
}

/** The executor requests made for one session, and the effects counted for their keys. */
function effectsOf(uid: string): { keys: string[]; effects: number[] } {
  const keys = [...new Set(executor.requests.filter((q) => q.body.session === uid).map((q) => q.key))];
  return { keys, effects: keys.map((k) => executor.effects.get(k) ?? 0) };
}

describe("agentctl exec and get on a parked turn", () => {
  it("exec: a REQUIRES_APPROVAL call parks the turn, prints the parked line and exits 0", async () => {
    const r = await agentctl(["--server", server.url, "exec", "--harness", "tools", "--config-file", config, "--input", "pay"]);
    expect(r.code, r.stderr).toBe(0);
    const uid = sessionOf(r);
    expect(r.lines).toEqual([`session ${uid}`, ...parkedPrefix(uid), `parked: awaiting approval of tool_call=g1 request_seq=4 (agentctl approve ${uid})`]);
    expect(effectsOf(uid).keys).toEqual([]);
  });

  it("get: shows the pending approval tuple while the turn awaits a decision", async () => {
    const uid = await parked();
    const p = await pending(server, uid);
    expect(p).toMatchObject({ toolCallId: "g1", requestSeq: "4", executionId: expect.stringMatching(/.+/) });
    const r = await agentctl(["--server", server.url, "get", uid]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines).toEqual(
      expect.arrayContaining(["exec_state     AWAITING", "compute_state  COLD", `pending_approval  execution=${p!.executionId} tool_call=g1 request_seq=4`]),
    );
  });
});

describe("agentctl approve and deny", () => {
  it("approve: commits the decision, resumes, and the executor runs the call exactly once", async () => {
    const uid = await parked();
    const r = await agentctl(["--server", server.url, "approve", uid]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines).toEqual(["decision committed at seq 6 (approved)", `session ${uid} resume compute=LIVE last_seq=10`]);
    expect(await replay(server, uid)).toEqual([
      ...parkedPrefix(uid),
      "seq=6  EVENT_APPROVAL_RESULT  tool_call_id=g1 approved",
      "seq=7  EVENT_TOOL_RESULT  id=g1",
      "seq=8  EVENT_OUTPUT  assistant: pay: ok CODE_UNSPECIFIED pay done",
      "seq=9  EVENT_END  state=COMPLETED",
      "seq=10  EVENT_LIFECYCLE  RESUME",
    ]);
    const { keys, effects } = effectsOf(uid);
    expect(keys).toHaveLength(1);
    expect(effects).toEqual([1]);
    expect(await pending(server, uid)).toBeUndefined();
  });

  it("deny --reason: journals an APPROVAL_DENIED receipt and the executor is never called", async () => {
    const uid = await parked();
    const r = await agentctl(["--server", server.url, "deny", uid, "--reason", "too much"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines).toEqual(["decision committed at seq 6 (denied)", `session ${uid} resume compute=LIVE last_seq=10`]);
    expect(await replay(server, uid)).toEqual([
      ...parkedPrefix(uid),
      "seq=6  EVENT_APPROVAL_RESULT  tool_call_id=g1 denied",
      "seq=7  EVENT_TOOL_RESULT  id=g1 error code=APPROVAL_DENIED",
      expect.stringMatching(/^seq=8 {2}EVENT_OUTPUT {2}assistant: pay: error APPROVAL_DENIED Execution of pay was denied: too much/),
      "seq=9  EVENT_END  state=COMPLETED",
      "seq=10  EVENT_LIFECYCLE  RESUME",
    ]);
    const json = await agentctl(["--server", server.url, "--json", "replay", uid, "--from", "6", "--to", "7"]);
    expect(json.lines.map((l) => JSON.parse(l))).toMatchObject([
      { seq: "6", event: { kind: "EVENT_APPROVAL_RESULT", approvalResult: { toolCallId: "g1", reason: "too much", requestSeq: "4" } } },
      {
        seq: "7",
        event: { kind: "EVENT_TOOL_RESULT", result: { id: "g1", isError: true, code: "APPROVAL_DENIED", approvalRequestSeq: "4", approvalDecisionSeq: "6" } },
      },
    ]);
    expect(effectsOf(uid).keys).toEqual([]);
  });

  it("approve: an exact retry with the explicit tuple returns the original decision seq; a changed one fails", async () => {
    const uid = await parked();
    const p = (await pending(server, uid))!;
    const first = await agentctl(["--server", server.url, "--json", "approve", uid, "--reason", "within budget"]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.lines.map((l) => JSON.parse(l))).toMatchObject([
      { seq: "6", event: { kind: "EVENT_APPROVAL_RESULT", approvalResult: { toolCallId: "g1", approved: true, reason: "within budget", requestSeq: "4" } } },
      { metadata: { uid }, lastSeq: "10", execState: "EXEC_COMPLETED", computeState: "COMPUTE_LIVE" },
    ]);

    const tuple = ["--execution", p.executionId, "--tool-call", "g1", "--request-seq", "4"];
    const retry = await agentctl(["--server", server.url, "approve", uid, ...tuple, "--reason", "within budget"]);
    expect(retry.code, retry.stderr).toBe(0);
    // The same decision record; the Resume after it only marks the finished session resumed again.
    expect(retry.lines).toEqual(["decision committed at seq 6 (approved)", `session ${uid} resume compute=LIVE last_seq=11`]);

    const changed = await agentctl(["--server", server.url, "deny", uid, ...tuple, "--reason", "within budget"]);
    expect(changed.code).toBe(1);
    expect(changed.stderr).toMatch(/^agentctl deny: failed_precondition: /);
    expect(changed.stdout).toBe("");
    expect(effectsOf(uid).effects).toEqual([1]);
  });

  it("approve --no-resume: commits only the decision; a later resume runs the call", async () => {
    const uid = await parked();
    const r = await agentctl(["--server", server.url, "approve", uid, "--no-resume"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines).toEqual(["decision committed at seq 6 (approved)"]);
    expect(await pending(server, uid)).toBeUndefined();
    expect((await agentctl(["--server", server.url, "get", uid])).lines).toContain("exec_state     AWAITING");
    expect(effectsOf(uid).keys).toEqual([]);

    const resume = await agentctl(["--server", server.url, "resume", uid]);
    expect(resume.lines).toEqual([`session ${uid} resume compute=LIVE last_seq=10`]);
    expect(effectsOf(uid).effects).toEqual([1]);
  });

  it("approve: a session with nothing pending exits 1 with a hint to resume or pass the tuple", async () => {
    const uid = sessionOf(await agentctl(["--server", server.url, "exec", "--input", "hello"]));
    const r = await agentctl(["--server", server.url, "approve", uid]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/^agentctl approve: nothing pending: /);
    expect(r.stderr).toContain(`agentctl resume ${uid}`);
    expect(r.stderr).toContain("--execution, --tool-call and --request-seq");
  });

  it("approve: a partial tuple, or deny without --reason, is a usage error (exit 2) and commits nothing", async () => {
    const uid = await parked();
    const partial = await agentctl(["--server", server.url, "approve", uid, "--execution", "x", "--tool-call", "g1"]);
    expect(partial.code).toBe(2);
    expect(partial.stderr).toMatch(/^agentctl approve: --execution, --tool-call and --request-seq .*pass all three/);
    expect(partial.stderr).toContain("usage: agentctl approve");
    const noReason = await agentctl(["--server", server.url, "deny", uid]);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toMatch(/^agentctl deny: deny needs --reason R/);
    expect(await pending(server, uid)).toMatchObject({ toolCallId: "g1", requestSeq: "4" });
  });
});

describe("agentctl approve without a tool executor", () => {
  it("approve: reports the committed decision and the failed resume, exits 1, and the decision stays", async () => {
    const uid = await parked(bare);
    const r = await agentctl(["--server", bare.url, "approve", uid]);
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(["decision committed at seq 6 (approved)"]);
    expect(r.stderr).toMatch(/^agentctl approve: decision committed at seq 6; resume failed: failed_precondition: .*TOOL_EXECUTOR_URL/);

    const get = await agentctl(["--server", bare.url, "get", uid]);
    expect(get.lines).toContain("exec_state     AWAITING");
    expect(get.lines.filter((l) => l.startsWith("pending_approval"))).toEqual([]);
    // The decision is journaled and the call never ran: no receipt, no output, no END. (The failed
    // Resume also journals an EVENT_ERROR today; that is the host's business, not asserted here.)
    const log = await replay(bare, uid);
    expect(log.slice(0, 6)).toEqual([...parkedPrefix(uid), "seq=6  EVENT_APPROVAL_RESULT  tool_call_id=g1 approved"]);
    expect(log.filter((l) => /EVENT_(TOOL_RESULT|OUTPUT|END)\b/.test(l))).toEqual([]);

    // Nothing is pending any more, so a second approve points at resume rather than deciding again.
    const again = await agentctl(["--server", bare.url, "approve", uid]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`agentctl resume ${uid}`);

    // What the hint promises: with an executor configured, a plain resume finishes the turn once.
    await bare.server.stop();
    bare = await startHost({ persistDir: bare.server.persistDir, port: bare.server.port, vars: { TEST_HARNESSES: "1", TOOL_EXECUTOR_URL: executor.url } });
    const resume = await agentctl(["--server", bare.url, "resume", uid]);
    expect(resume.code, resume.stderr).toBe(0);
    expect((await replay(bare, uid)).slice(-4).map((l) => l.replace(/^seq=\d+ {2}/, ""))).toEqual([
      "EVENT_TOOL_RESULT  id=g1",
      "EVENT_OUTPUT  assistant: pay: ok CODE_UNSPECIFIED pay done",
      "EVENT_END  state=COMPLETED",
      "EVENT_LIFECYCLE  RESUME",
    ]);
    expect(effectsOf(uid).effects).toEqual([1]);
  });
});
