/**
 * Session lifecycle end to end (issue 4 "Done when") against a real `wrangler dev`: Cancel during a
 * slow model call, DeleteSession with tombstones, and Get and List agreeing on the state axes.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventKind, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ComputeState, ExecState, type Session } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";

let fake: FakeOpenAi;
let server: DevServer;
let client: SessionsClient;

beforeAll(async () => {
  fake = await startFakeOpenAi();
  server = await startDevServer({ vars: { MODEL_BASE_URL: fake.url, MODEL_DEFAULT: "stand-in-1" } });
  client = new SessionsClient({ server: server.url });
});

afterAll(async () => {
  await server?.dispose();
  await fake?.close();
});

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}

const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));

async function listed(project: string): Promise<Session[]> {
  const out: Session[] = [];
  for await (const s of client.list({ project })) out.push(s);
  return out;
}

describe("Cancel", () => {
  it("cancel: a turn in a slow model call ends CANCELED, its stream ends CANCELLED, and nothing is appended after", async () => {
    fake.next = () => ({ kind: "hold" });
    const s = await client.create({ harness: "chat" });
    const uid = s.metadata!.uid;
    const before = fake.requests.length;
    const turn = client.exec({ session: uid, inputs: ["slow"] }).catch((e) => ConnectError.from(e));
    await fake.waitForRequests(before + 1);
    const canceled = await client.raw.cancel({ session: uid, reason: "USER" });
    fake.next = () => ({ kind: "answer" });
    fake.releaseHeld();
    expect(canceled.execState).toBe(ExecState.EXEC_CANCELED);
    const err = await turn;
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Canceled);

    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "END", "LIFECYCLE"]);
    const end = rs[3]!.event!.body;
    expect(end.case === "end" && end.value.state).toBe("CANCELED");
    // Resume does not re-drive a canceled turn: no provider call, only its own marker.
    const afterCancel = fake.requests.length;
    await client.raw.resume({ session: uid });
    expect(fake.requests.length).toBe(afterCancel);
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "END", "LIFECYCLE", "LIFECYCLE"]);
  });
});

describe("DeleteSession", () => {
  it("delete: the session becomes unreachable; the Directory keeps a tombstone; forked children survive", async () => {
    const project = `del-${Date.now()}`;
    const s = await client.create({ project });
    const uid = s.metadata!.uid;
    const turn = await client.exec({ session: uid, inputs: ["keep me"] });
    const [child] = await client.raw.fork({ session: uid, count: 1 }).then((r) => r.children);
    const finalHash = turn.records[turn.records.length - 1]!.contentHash;

    const deleted = await client.raw.deleteSession({ uid });
    expect(deleted.lastSeq).toBe(5n);
    for (const call of [
      () => client.get(uid),
      () => records(uid),
      () => client.exec({ session: uid, inputs: ["x"] }),
      () => client.raw.resume({ session: uid }),
    ]) {
      const err = await call().catch((e) => ConnectError.from(e));
      expect((err as ConnectError).code).toBe(Code.NotFound);
    }
    const audit = await client.verify(uid).catch((e) => ConnectError.from(e));
    expect((audit as ConnectError).code).toBe(Code.NotFound);
    expect((audit as ConnectError).rawMessage).toContain("was deleted");
    expect((audit as ConnectError).rawMessage).toContain(finalHash);
    expect((await listed(project)).map((x) => x.metadata!.uid)).toEqual([child!.metadata!.uid]);

    const kept = await client.verify(child!.metadata!.uid, { replay: true });
    expect(kept).toMatchObject({ chainOk: true, replayOk: true, outputs: ["echo:keep me"] });
  });
});

describe("exact states", () => {
  it("states: Get and List agree on exec and compute state after each operation", async () => {
    const project = `states-${Date.now()}`;
    const s = await client.create({ project });
    const uid = s.metadata!.uid;
    const agree = async (exec: ExecState, compute: ComputeState) => {
      const got = await client.get(uid);
      const row = (await listed(project)).find((x) => x.metadata!.uid === uid)!;
      expect([got.execState, got.computeState]).toEqual([exec, compute]);
      expect([row.execState, row.computeState, row.lastSeq]).toEqual([exec, compute, got.lastSeq]);
    };
    await agree(ExecState.EXEC_PENDING, ComputeState.COMPUTE_NONE);
    await client.exec({ session: uid, inputs: ["a"] });
    await agree(ExecState.EXEC_COMPLETED, ComputeState.COMPUTE_LIVE);
    await client.raw.suspend({ session: uid });
    await agree(ExecState.EXEC_COMPLETED, ComputeState.COMPUTE_COLD);
    await client.raw.resume({ session: uid });
    await agree(ExecState.EXEC_COMPLETED, ComputeState.COMPUTE_LIVE);
    fake.next = () => ({ kind: "error", status: 500 });
    await client.exec({ session: uid, inputs: ["b"], harness: "chat" }).catch(() => undefined);
    fake.next = () => ({ kind: "answer" });
    await agree(ExecState.EXEC_FAILED, ComputeState.COMPUTE_LIVE);
    await client.raw.cancel({ session: uid });
    await agree(ExecState.EXEC_CANCELED, ComputeState.COMPUTE_LIVE);
    const [child] = (await client.raw.fork({ session: uid, atSeq: 5n })).children;
    const childRow = (await listed(project)).find((x) => x.metadata!.uid === child!.metadata!.uid)!;
    expect([childRow.execState, childRow.computeState]).toEqual([ExecState.EXEC_COMPLETED, ComputeState.COMPUTE_COLD]);
  });
});
