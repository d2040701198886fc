/**
 * Tools and approvals end to end (issue 5 "Done when") against a real `wrangler dev`, a real HTTP
 * stand-in executor that deduplicates by key and counts effects, and the test-only `tools`
 * harness (TEST_HARNESSES=1), which makes the tool calls its execution config lists.
 */
import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventKind, ToolResult_Code, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecState, SessionSchema, type Session } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";
import { waitFor } from "../support/wait.js";

let exec: FakeExecutor;
let fakeModel: FakeOpenAi;
let server: DevServer;
let client: SessionsClient;

beforeAll(async () => {
  exec = await startFakeExecutor();
  fakeModel = await startFakeOpenAi();
  server = await startDevServer({
    vars: { TEST_HARNESSES: "1", TOOL_EXECUTOR_URL: exec.url, TOOL_EXECUTOR_TOKEN: "exec-SECRET-7", MODEL_BASE_URL: fakeModel.url, MODEL_DEFAULT: "m" },
  });
  client = new SessionsClient({ server: server.url });
});

afterAll(async () => {
  await server?.dispose();
  await exec?.close();
  await fakeModel?.close();
});

const config = (calls: unknown[]) => new TextEncoder().encode(JSON.stringify({ calls }));

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}

const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));
const receipts = (rs: LogRecord[]) => rs.flatMap((r) => (r.event?.body.case === "result" ? [r.event.body.value] : []));

async function parkedSession(calls: unknown[]): Promise<{ uid: string; final: Session }> {
  const s = await client.create({ harness: "tools" });
  const uid = s.metadata!.uid;
  const turn = await client.exec({ session: uid, inputs: ["go"], config: config(calls) });
  return { uid, final: turn.finalSession! };
}

async function decide(uid: string, approved: boolean, reason = "") {
  const p = (await client.get(uid)).pendingApproval!;
  return client.raw.approve({ session: uid, executionId: p.executionId, toolCallId: p.toolCallId, requestSeq: p.requestSeq, approved, reason });
}

describe("host-mediated tools", () => {
  it("tool: the effect runs once even when the server is killed between the effect and its receipt; replay calls nothing", async () => {
    const s = await client.create({ harness: "tools" });
    const uid = s.metadata!.uid;
    let first = true;
    exec.next = () => (first ? ((first = false), { kind: "effect-then-hold" }) : { kind: "ok" });
    const before = exec.requests.length;
    const turn = client.exec({ session: uid, inputs: ["charge"], config: config([{ id: "c1", tool: "charge", args: { cents: 500 } }]) }).catch((e) => e);
    await exec.waitForRequests(before + 1);
    await server.kill();
    exec.releaseHeld();
    exec.next = () => ({ kind: "ok" });
    await server.restart();
    await turn;

    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL"]);
    const key = exec.requests[before]!.key;
    expect(key).toMatch(new RegExp(`^${uid}/`));
    expect(exec.requests[before]!.authorization).toBe("Bearer exec-SECRET-7");
    await client.raw.resume({ session: uid });
    expect(exec.requests.slice(before).map((r) => r.key)).toEqual([key, key]);
    expect(exec.effects.get(key)).toBe(1);
    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END", "LIFECYCLE"]);
    expect(receipts(rs)).toHaveLength(1);

    const requests = exec.requests.length;
    const models = fakeModel.requests.length;
    const v = await client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n, outputs: ["charge: ok CODE_UNSPECIFIED charge done"] });
    expect(exec.requests.length).toBe(requests);
    expect(fakeModel.requests.length).toBe(models);
    expect(JSON.stringify(rs.map((r) => r.toString()))).not.toContain("SECRET");
  });

  it("tool (checklist §8.17 #167): an executor failure the harness does not handle fails the Exec INTERNAL after the intent, with no receipt", async () => {
    const s = await client.create({ harness: "tools" });
    const uid = s.metadata!.uid;
    const before = exec.requests.length;
    exec.next = () => ({ kind: "fail", status: 500 });
    const err = await client
      .exec({ session: uid, inputs: ["charge"], config: config([{ id: "c1", tool: "charge", args: { cents: 5 } }]) })
      .catch((e) => ConnectError.from(e));
    exec.next = () => ({ kind: "ok" });
    expect((err as ConnectError).code).toBe(Code.Internal);
    expect((err as ConnectError).rawMessage).toContain("500");
    expect(exec.requests.length - before).toBe(1);
    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "ERROR"]);
    expect(receipts(rs)).toEqual([]);
  });

  it("tool: a refused call (no key, not mediated, non-JSON args) fails the turn with nothing recorded for it", async () => {
    const s = await client.create({ harness: "tools" });
    const before = exec.requests.length;
    const err = await client
      .exec({
        session: s.metadata!.uid,
        inputs: [],
        config: new TextEncoder().encode(JSON.stringify({ swallow: true, calls: [{ tool: "x", key: "" }, { tool: "y" }] })),
      })
      .catch((e) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.Internal);
    expect(kinds(await records(s.metadata!.uid))).toEqual(["EXECUTION_START", "ERROR"]);
    expect(exec.requests.length).toBe(before);
  });
});

describe("approval gates", () => {
  it("approve: the park ends OK (AWAITING, COLD, pending), survives a restart, and Resume runs the effect once", async () => {
    const { uid, final } = await parkedSession([{ id: "g1", tool: "pay", args: { amount: 10 }, mediation: "REQUIRES_APPROVAL" }]);
    expect(final).toMatchObject({ execState: ExecState.EXEC_AWAITING, computeState: 4, pendingApproval: { toolCallId: "g1", requestSeq: 4n } });
    const blocked = await client.exec({ session: uid, inputs: ["more"] }).catch((e) => ConnectError.from(e));
    expect((blocked as ConnectError).code).toBe(Code.FailedPrecondition);

    await server.stop();
    await server.restart();
    const got = await client.get(uid);
    expect(got.pendingApproval?.requestSeq).toBe(4n);
    // checklist §8.17 #188: the listing shows the same pending approval after the restart.
    let listed: Session | undefined;
    for await (const x of client.list()) if (x.metadata?.uid === uid) listed = x;
    expect(listed?.pendingApproval).toEqual(got.pendingApproval);
    expect(listed).toMatchObject({ execState: ExecState.EXEC_AWAITING, computeState: 4, lastSeq: got.lastSeq });
    const tuple = got.pendingApproval!;

    const before = exec.requests.length;
    const approved = await decide(uid, true, "fine");
    expect(approved.decision?.seq).toBe(6n);
    expect(approved.session?.pendingApproval).toBeUndefined();
    expect(exec.requests.length).toBe(before);
    const resumed = await client.raw.resume({ session: uid });
    expect(resumed.execState).toBe(ExecState.EXEC_COMPLETED);
    expect(exec.requests.length - before).toBe(1);
    const rs = await records(uid);
    expect(kinds(rs)).toEqual([
      "EXECUTION_START",
      "INPUT",
      "TOOL_CALL",
      "APPROVAL_REQUEST",
      "LIFECYCLE",
      "APPROVAL_RESULT",
      "TOOL_RESULT",
      "OUTPUT",
      "END",
      "LIFECYCLE",
    ]);
    expect(receipts(rs)[0]).toMatchObject({
      id: "g1",
      code: ToolResult_Code.CODE_UNSPECIFIED,
      isError: false,
      approvalRequestSeq: 4n,
      approvalDecisionSeq: 6n,
    });

    // checklist §8.17 #188: an exact retry after a newer turn returns the original decision and changes nothing.
    const newer = await client.exec({ session: uid, inputs: ["next"], config: config([]) });
    const head = newer.cursor;
    const retried = await client.raw.approve({
      session: uid,
      executionId: tuple.executionId,
      toolCallId: tuple.toolCallId,
      requestSeq: tuple.requestSeq,
      approved: true,
      reason: "fine",
    });
    expect(retried.decision?.seq).toBe(6n);
    expect(retried.decision?.contentHash).toBe(approved.decision?.contentHash);
    expect((await client.get(uid)).lastSeq).toBe(head);
    expect(exec.requests.length - before).toBe(1);
  });

  it("deny: the receipt is APPROVAL_DENIED, the executor is never called, and the turn ends", async () => {
    const { uid } = await parkedSession([{ id: "g1", tool: "drop-table", mediation: "REQUIRES_APPROVAL" }]);
    const before = exec.requests.length;
    await decide(uid, false, "too risky");
    const recovered = await client.exec({ session: uid });
    expect(exec.requests.length).toBe(before);
    expect(receipts(recovered.records)[0]).toMatchObject({ code: ToolResult_Code.APPROVAL_DENIED, isError: true });
    expect(recovered.outputs[0]).toMatch(/^drop-table: error APPROVAL_DENIED .*too risky/);
    expect(kinds(recovered.records).slice(-1)).toEqual(["END"]);
  });

  it("approve: an executor failure becomes an EXECUTOR_ERROR receipt and the turn still ends", async () => {
    const { uid } = await parkedSession([{ id: "g1", tool: "flaky", mediation: "REQUIRES_APPROVAL" }]);
    exec.next = () => ({ kind: "fail", status: 502 });
    await decide(uid, true);
    await client.raw.resume({ session: uid });
    exec.next = () => ({ kind: "ok" });
    const rs = await records(uid);
    expect(receipts(rs)[0]).toMatchObject({ code: ToolResult_Code.EXECUTOR_ERROR, isError: true });
    expect(receipts(rs)[0]!.error).toContain("502");
    expect(kinds(rs).slice(-3)).toEqual(["OUTPUT", "END", "LIFECYCLE"]);
  });

  it("deadline: an undecided gate is denied by the system when its deadline passes, and the turn completes", async () => {
    const { uid, final } = await parkedSession([{ id: "g1", tool: "pay", mediation: "REQUIRES_APPROVAL", approval_timeout_seconds: 1 }]);
    expect(final.execState).toBe(ExecState.EXEC_AWAITING);
    await waitFor("the deadline's denial to complete the turn", async () => (await client.get(uid)).execState === ExecState.EXEC_COMPLETED);
    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE", "APPROVAL_RESULT", "TOOL_RESULT", "OUTPUT", "END"]);
    const decision = rs[5]!.event!;
    expect(decision.actor?.principal).toBe("system:approval-deadline");
    expect(decision.body.case === "approvalResult" && decision.body.value).toMatchObject({ approved: false });
    expect(receipts(rs)[0]).toMatchObject({ code: ToolResult_Code.APPROVAL_DENIED });
  });
});

describe("listings and fork metadata through a restart", () => {
  it("restart (checklist §8.15 #133, checklist §8.17 #169 #174): a project's listing (an eventless session included, exact project, pages of 2) and forked children's metadata read the same after a server restart", async () => {
    const project = `restart-${Date.now()}`;
    const note = 'say "hi"\nthen — ünïcødé ✓';
    const empty = await client.create({ project, name: "empty", model: "m-empty" });
    const parent = await client.create({ project, name: "parent", labels: { team: "x" }, annotations: { note } });
    await client.create({ project: `${project}-other` });
    await client.exec({ session: parent.metadata!.uid, inputs: ["hi"] });
    const [kid] = await client.fork(parent.metadata!.uid, { labels: { child: "1" }, names: ["kid"] });
    const [bare] = await client.fork(parent.metadata!.uid);
    const uids = [empty, parent, kid!, bare!].map((x) => x.metadata!.uid);

    const listing = async () => {
      const out: Session[] = [];
      for await (const x of client.list({ project, pageSize: 2 })) out.push(x);
      return out;
    };
    const snapshot = async () => ({
      listed: (await listing()).map((x) => toJsonString(SessionSchema, x)),
      got: await Promise.all(uids.map(async (u) => toJsonString(SessionSchema, await client.get(u)))),
    });

    const listed = await listing();
    expect(new Set(listed.map((x) => x.metadata!.uid))).toEqual(new Set(uids));
    expect(listed).toHaveLength(4);
    const created = listed.map((x) => x.metadata!.createTime!.seconds * 1_000_000_000n + BigInt(x.metadata!.createTime!.nanos));
    expect([...created].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(created);
    expect(listed.find((x) => x.metadata!.uid === uids[0])).toMatchObject({
      lastSeq: 0n,
      computeState: 1,
      model: "m-empty",
      metadata: { project, name: "empty" },
    });
    const children = listed.filter((x) => x.parentUid === uids[1]);
    expect(children.map((x) => x.metadata!.uid).sort()).toEqual([uids[2], uids[3]].sort());
    expect(await client.get(uids[2]!)).toMatchObject({ labels: { child: "1" }, annotations: { note }, metadata: { name: "kid", project } });
    const bareChild = await client.get(uids[3]!);
    expect(bareChild.labels).toEqual({});
    expect(bareChild.annotations).toEqual({ note });
    expect(bareChild.identity).toBeUndefined();
    const before = await snapshot();

    await server.stop();
    await server.restart();

    expect(await snapshot()).toEqual(before);
  });
});
