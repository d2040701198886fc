/**
 * Checklist checklist §8.1 #2 and #14 with the session core in process (SessionHost on sql.js): every turn
 * run by a new host over a freshly reopened copy of the SQLite file, and a streaming model whose
 * deltas reach the live Exec stream but never a replay or a recovery that serves the recorded answer.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import type { ExecUpdate } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { assistantText, textOf, userText } from "../../../proto/messages.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import { createModelInvoker, type ModelInvoker } from "../../../objects/controller/models.js";
import { Journal } from "../../../objects/journal/journal.js";
import { SessionHost } from "../../../objects/session/facade.js";
import { createSession, descriptor, drain, execReq } from "../support/session-fixture.js";
import { createTestDb, type TestDb } from "../support/sqljs-db.js";

/** A SessionHost over `db`, as a Durable Object constructs one after a restart: no memory kept. */
function hostOver(db: TestDb, harnesses: Record<string, Harness>, models: () => ModelInvoker = () => createModelInvoker({})) {
  return new SessionHost({
    db,
    now: () => 1_700_000_000_000,
    models,
    directory: async () => undefined,
    harnesses: { get: (n) => harnesses[n], names: () => Object.keys(harnesses) },
    erase: async () => undefined,
    log: () => undefined,
    setAlarm: async () => undefined,
  });
}

const records = (updates: ExecUpdate[]) => updates.flatMap((u) => (u.update.case === "record" ? [u.update.value] : []));
const deltas = (updates: ExecUpdate[]) => updates.flatMap((u) => (u.update.case === "delta" ? [u.update.value] : []));

function outputs(db: TestDb): string[] {
  return new Journal(db)
    .read(1n, 0n, 1_000_000)
    .map((r) => fromBinary(EventSchema, r.event))
    .flatMap((e) => (e.kind === EventKind.EVENT_OUTPUT && e.body.case === "message" ? [textOf(e.body.value)] : []));
}

describe("conformance core in process", () => {
  it("three turns, each by a new host over the reopened SQLite file with CAS at the previous head: all succeed, the chain verifies (checklist §8.1 #2)", async () => {
    let db = createTestDb();
    await createSession(hostOver(db, { echo: echoHarness }));
    let head = 0n;
    for (const word of ["one", "two", "three"]) {
      // Reopen: a new database from the file's bytes, and a new host (a new controller) over it.
      const bytes = db.raw.export();
      db.raw.close();
      db = createTestDb(bytes);
      const host = hostOver(db, { echo: echoHarness });
      const { updates, failure } = await drain(host.exec(execReq({ inputs: [userText(word)], expectedLastSeq: head })));
      expect(failure).toBeUndefined();
      const rs = records(updates);
      expect(rs[0]!.seq).toBe(head + 1n);
      head = rs.at(-1)!.seq;
      const s = host.get();
      expect(s.ok && s.value.lastSeq).toBe(head);
    }
    db = createTestDb(db.raw.export());
    const last = hostOver(db, { echo: echoHarness });
    expect(outputs(db)).toEqual(["echo:one", "echo:two", "echo:three"]);
    expect(await last.audit(false)).toMatchObject({ ok: true, value: { chain: { ok: true, records: head } } });
    // The CAS really is checked against the reopened head: the first turn's cursor is stale now.
    const stale = await drain(last.exec(execReq({ inputs: [userText("four")], expectedLastSeq: 0n })));
    expect(stale.failure).toMatchObject({ reason: "cas_conflict" });
  });

  it("live deltas carry the execution id; replay and a recovery that serves the recorded answer emit none and call no model (checklist §8.1 #14)", async () => {
    const counts = { calls: 0, deltas: 0 };
    const streaming = (): ModelInvoker => ({
      resolve: (m) => m || "m",
      serves: () => true,
      async invoke(req, opts) {
        counts.calls++;
        for (const chunk of ["str", "eamed:", textOf(req.messages.at(-1))]) {
          counts.deltas++;
          opts.onDelta?.(chunk);
        }
        return { message: assistantText(`streamed:${textOf(req.messages.at(-1))}`) };
      },
      get calls() {
        return counts.calls;
      },
    });
    const streamer: Harness = {
      describe: () => descriptor("streamer"),
      async run(start, sink) {
        await sink.model({ model: "m", messages: [userText(textOf(start.inputs[0]))] });
      },
    };
    const db = createTestDb();
    const host = hostOver(db, { streamer }, streaming);
    await createSession(host, "streamer");
    const live = await drain(host.exec(execReq({ inputs: [userText("hi")] })));
    expect(live.failure).toBeUndefined();
    const executionId = records(live.updates)[0]!.event!.executionId;
    const liveDeltas = deltas(live.updates);
    expect(liveDeltas.filter((d) => !d.done).map((d) => d.chunk)).toEqual(["str", "eamed:", "hi"]);
    expect(liveDeltas.every((d) => d.executionId === executionId)).toBe(true);
    expect(counts).toEqual({ calls: 1, deltas: 3 });

    // Replay (Audit.Verify): the recorded answer is served; the model, and so its deltas, never run.
    const audit = await host.audit(true);
    expect(audit).toMatchObject({ ok: true, value: { chain: { ok: true }, replay: { ok: true, outputs: ["streamed:hi"], modelCalls: 0 } } });
    expect(counts).toEqual({ calls: 1, deltas: 3 });

    // A crash lost END: recovery through an Exec stream that relays deltas serves the recorded
    // MODEL_CALL and OUTPUT, so the stream carries records but no delta.
    db.query("DELETE FROM events WHERE seq > 4");
    const recovering = hostOver(db, { streamer }, streaming);
    const recovered = await drain(recovering.exec(execReq({})));
    expect(recovered.failure).toBeUndefined();
    expect(records(recovered.updates).map((r) => EventKind[r.event!.kind])).toContain("EVENT_END");
    expect(deltas(recovered.updates)).toEqual([]);
    expect(counts).toEqual({ calls: 1, deltas: 3 });
    expect(outputs(db)).toEqual(["streamed:hi"]);
  });
});
