/**
 * ListSessions while a session runs turns back to back, on a `wrangler dev` of its own (it is
 * killed): the session stops reporting each turn to the Directory and marks its row live instead
 * (objects/session/directory-reports.ts), and a listing asks a live row's session. The listing is
 * exact after every turn, and after a crash in the middle of the burst, when the Directory's own
 * copy of the row is as old as the burst's first turn (docs/behaviour.md §4.3).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecState, type Session } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { type Host, startHost } from "../support/host.js";

let host: Host;

beforeAll(async () => {
  host = await startHost();
});

afterAll(async () => {
  await host?.stop();
});

async function listed(project: string, uid: string): Promise<Session> {
  for await (const s of host.client.list({ project })) if (s.metadata?.uid === uid) return s;
  throw new Error(`${uid} is not listed`);
}

describe("ListSessions during a burst of turns", () => {
  it("list: exact after every turn of a burst, and after a crash in the middle of one", { timeout: 120_000 }, async () => {
    const project = "burst";
    const uid = (await host.client.create({ project })).metadata!.uid;
    // Back to back: every turn after the first is within the burst window of the one before.
    for (let turn = 1; turn <= 6; turn++) {
      const r = await host.client.exec({ session: uid, inputs: [`turn ${turn}`] });
      expect(r.records.length).toBe(5);
      const s = await listed(project, uid);
      expect([s.lastSeq, s.execState]).toEqual([BigInt(5 * turn), ExecState.EXEC_COMPLETED]);
    }
    await host.client.exec({ session: uid, inputs: ["the last before the crash"] });
    // At once, well inside the burst's quiet window: the session has not settled its row.
    await host.kill();
    await host.restart();
    const after = await listed(project, uid);
    expect([after.lastSeq, after.execState]).toEqual([35n, ExecState.EXEC_COMPLETED]);
    expect(after).toEqual(await host.client.get(uid));
    // The chain is whole and reaches the head the Directory anchored (the burst's live mark).
    expect(await host.client.verify(uid)).toMatchObject({ chainOk: true, records: 35n });
  });
});
