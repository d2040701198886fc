/**
 * SessionObject inside workerd (the workers pool): SQLite storage, transactionSync, the
 * synchronous node:crypto hash, and the Worker's Connect routing through SELF.
 */
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { describe, expect, it, vi } from "vitest";
import { contentHash } from "../../proto/canon.js";
import { EventSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecRequestSchema, SessionSchema, Sessions } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../../proto/ids.js";
import { userText } from "../../proto/messages.js";
import { FrameDecoder } from "../../objects/exec-frames.js";
import type { ExecStart } from "../../objects/session/turns.js";
import type { SessionObject } from "../../objects/session/object.js";
import { INITIAL_STATES } from "../../objects/session/meta-store.js";
import { packRecords, unpackRecords } from "../../objects/journal/record-pack.js";
import { sqlDbFromStorage } from "../../objects/storage/do-sql.js";
import { Journal } from "../../objects/journal/journal.js";
import { shortForm } from "../../objects/journal/stored-event.js";

function stubFor(uid: string) {
  return env.SESSIONS.get(env.SESSIONS.idFromName(`default/${uid}`));
}

/** How many frames a turn's stream holds (the stream as a Worker that did not ask for `whole` gets it). */
async function readAll(start: ExecStart) {
  if (!start.ok) throw new Error(start.message);
  if (!("frames" in start)) throw new Error("a turn came back whole to a reader that did not ask");
  const dec = new FrameDecoder();
  const reader = start.frames.getReader();
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return n;
    n += dec.push(value).length;
  }
}

describe("SessionObject in workerd", () => {
  it("exec: appends hash-chained rows whose hashes equal the canonical hash", async () => {
    const uid = mintSessionUid();
    const stub = stubFor(uid);
    const statics = toBinary(SessionSchema, create(SessionSchema, { metadata: { project: "default" }, harness: "echo" }));
    expect((await stub.create("default", uid, statics)).ok).toBe(true);
    const start = await stub.exec(toBinary(ExecRequestSchema, create(ExecRequestSchema, { inputs: [userText("hi")] })));
    if (!start.ok) throw new Error(start.message);
    expect(await readAll(start)).toBe(6);
    const { rows, events } = await runInDurableObject(stub, (_o: SessionObject, state) => ({
      rows: state.storage.sql
        .exec<{ seq: number; hash: string; event: ArrayBuffer }>("SELECT seq, hex(hash) AS hash, event FROM events ORDER BY seq")
        .toArray(),
      events: new Journal(sqlDbFromStorage(state.storage)).read(1n, 0n, 100).map((r) => r.event),
    }));
    expect(rows).toHaveLength(5);
    // The turn's records after its first are stored without the execution id (objects/journal/stored-event.ts).
    expect(rows.map((r) => shortForm(new Uint8Array(r.event)) !== undefined)).toEqual([false, true, true, true, true]);
    // Each hash is stored once, as 32 bytes; a record's prev_hash is the row before's hash.
    let prev = "";
    rows.forEach((r, i) => {
      const hash = String(r.hash).toLowerCase();
      expect(hash).toBe(contentHash(fromBinary(EventSchema, events[i]!), prev as "", BigInt(r.seq)));
      prev = hash;
    });
    const verified = await stub.audit(false);
    expect(verified.ok && verified.value.chain.ok).toBe(true);
    // A Worker that asks for `whole` gets an echo turn that never waits as bytes: its updates and
    // the end frame. (The turn that starts a burst waits on the Directory: objects/session/directory-reports.ts.)
    await readAll(await stub.exec(toBinary(ExecRequestSchema, create(ExecRequestSchema, { inputs: [userText("again")] }))));
    const whole = await stub.exec(toBinary(ExecRequestSchema, create(ExecRequestSchema, { inputs: [userText("and again")] })), "", true, true);
    if (!whole.ok || !("whole" in whole)) throw new Error("an echo turn did not come back whole");
    expect(new FrameDecoder().push(whole.whole).map((f) => f.kind)).toEqual([...Array(6).fill("update"), "end"]);
  });

  it("get: an unknown uid answers not found and creates no tables", async () => {
    const stub = stubFor(mintSessionUid());
    expect(await stub.get()).toMatchObject({ ok: false, reason: "session_not_found" });
    const tables = await runInDurableObject(stub, (_o: SessionObject, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'").toArray(),
    );
    expect(tables).toEqual([]);
  });

  it("transactionSync: a throw inside rolls back every write", async () => {
    const uid = mintSessionUid();
    const stub = stubFor(uid);
    await stub.create("default", uid, toBinary(SessionSchema, create(SessionSchema, { harness: "echo" })));
    const count = await runInDurableObject(stub, (_o: SessionObject, state) => {
      try {
        state.storage.transactionSync(() => {
          state.storage.sql.exec("INSERT INTO events (seq, hash, fence, event) VALUES (1, x'00', 0, x'00')");
          throw new Error("abort");
        });
      } catch {
        // expected
      }
      return state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM events").one().n;
    });
    expect(count).toBe(0);
  });

  it("SQL bindings: a Uint8Array view into a larger buffer is stored as exactly its own bytes", async () => {
    const stub = stubFor(mintSessionUid());
    const stored = await runInDurableObject(stub, (_o: SessionObject, state) => {
      const db = sqlDbFromStorage(state.storage);
      db.query("CREATE TABLE views (k INTEGER PRIMARY KEY, v BLOB NOT NULL)");
      const buffer = new Uint8Array(64).map((_, i) => i);
      db.query("INSERT INTO views (k, v) VALUES (?, ?), (?, ?)", 1, buffer.subarray(10, 13), 2, buffer.subarray(0, 0));
      return db.query<{ v: Uint8Array }>("SELECT v FROM views ORDER BY k").map((r) => [...r.v]);
    });
    expect(stored).toEqual([[10, 11, 12], []]);
  });

  it("fork seed: a child stores a packed prefix from the pack's bytes, and its chain verifies", async () => {
    const parentUid = mintSessionUid();
    const parent = stubFor(parentUid);
    await parent.create("default", parentUid, toBinary(SessionSchema, create(SessionSchema, { harness: "echo" })));
    for (let i = 0; i < 3; i++) {
      const turn = await parent.exec(toBinary(ExecRequestSchema, create(ExecRequestSchema, { inputs: [userText(`t${i}`)] })));
      if (!turn.ok) throw new Error(turn.message);
      await readAll(turn);
    }
    const page = await parent.readPacked(1n, 15n, 1 << 20);
    if (!page.ok) throw new Error(page.message);
    const childUid = mintSessionUid();
    const child = stubFor(childUid);
    const statics = toBinary(SessionSchema, create(SessionSchema, { harness: "echo" }));
    // Two packs, the second starting mid-turn, as worker/fork.ts splits a long prefix.
    const records = unpackRecords(page.value.pack);
    const first = await child.forkChild({ tenant: "default", uid: childUid, statics }, [packRecords(records.slice(0, 7))], undefined);
    expect(first.ok).toBe(true);
    const rest = await child.forkChild(undefined, [packRecords(records.slice(7))], { atSeq: 15n, states: INITIAL_STATES });
    expect(rest.ok).toBe(true);
    const verified = await child.audit(false);
    expect(verified.ok && verified.value.chain.ok).toBe(true);
    const events = await runInDurableObject(child, (_o: SessionObject, state) =>
      new Journal(sqlDbFromStorage(state.storage)).read(1n, 15n, 100).map((r) => [...r.event]),
    );
    expect(events).toEqual(records.map((r) => [...r.event]));
  });

  it("Connect through the Worker: CreateSession, Exec and Replay agree record for record", async () => {
    const transport = createConnectTransport({
      baseUrl: "http://127.0.0.1",
      fetch: (input, init) => SELF.fetch(input as RequestInfo, { ...init, redirect: "manual" }),
    });
    const client = createClient(Sessions, transport);
    const s = await client.createSession({ session: { metadata: { name: "pool" } } });
    const streamed = [];
    for await (const u of client.exec({ session: s.metadata!.uid, inputs: [userText("pool")] })) {
      if (u.update.case === "record") streamed.push(u.update.value);
    }
    const replayed = [];
    for await (const r of client.replay({ session: s.metadata!.uid })) replayed.push(r);
    expect(replayed).toHaveLength(5);
    expect(replayed.map((r) => r.contentHash)).toEqual(streamed.map((r) => r.contentHash));
    expect((await client.getSession({ uid: s.metadata!.uid })).lastSeq).toBe(5n);
  });

  it("request id: the Worker's rpc line and the session object's placement line of one Exec share it (checklist §8.17 #155)", async () => {
    const lines: string[] = [];
    // Every method: each line goes out through the one of its level (objects/log-line.ts).
    const spies = (["log", "info", "warn", "error", "debug"] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation((l: unknown) => void lines.push(String(l))),
    );
    try {
      const transport = createConnectTransport({
        baseUrl: "http://127.0.0.1",
        fetch: (input, init) =>
          SELF.fetch(input as RequestInfo, {
            ...init,
            redirect: "manual",
            headers: { ...Object.fromEntries(new Headers(init?.headers)), "x-request-id": "req-pool-155" },
          }),
      });
      const client = createClient(Sessions, transport);
      const s = await client.createSession({ session: { metadata: { name: "correlated" } } });
      for await (const _ of client.exec({ session: s.metadata!.uid, inputs: [userText("hi")] })) void _;
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    const parsed = lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
    const execLines = parsed.filter((l) => l.request_id === "req-pool-155" && (l.operation === "Exec" || l.msg === "placement"));
    expect(execLines.map((l) => l.msg).sort()).toEqual(expect.arrayContaining(["placement", "rpc"]));
    expect(lines.join("\n")).not.toContain('"hi"');
  });

  it("delete: erases the object's storage and the Directory keeps a tombstone with the final head", async () => {
    const uid = mintSessionUid();
    const stub = stubFor(uid);
    await stub.create("default", uid, toBinary(SessionSchema, create(SessionSchema, { metadata: { project: "del" }, harness: "echo" })));
    const start = await stub.exec(toBinary(ExecRequestSchema, create(ExecRequestSchema, { inputs: [userText("bye")] })));
    if (!start.ok) throw new Error(start.message);
    await readAll(start);
    const deleted = await stub.delete("default");
    expect(deleted.ok).toBe(true);
    const left = await runInDurableObject(stub, (_o: SessionObject, state) => ({
      tables: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'").toArray(),
      size: state.storage.sql.databaseSize,
    }));
    expect(left.tables).toEqual([]);
    expect(await stub.get()).toMatchObject({ ok: false, reason: "session_not_found" });
    const tomb = await env.DIRECTORY.get(env.DIRECTORY.idFromName("default")).head(uid);
    expect(tomb?.seq).toBe(5);
    expect(tomb?.deletedMs).toBeGreaterThan(0);
  });

  it("alarm: an expired approval is denied once and its turn completed once, however often the alarm runs", async () => {
    const uid = mintSessionUid();
    const stub = stubFor(uid);
    await stub.create("default", uid, toBinary(SessionSchema, create(SessionSchema, { harness: "tools" })));
    const config = new TextEncoder().encode(
      JSON.stringify({ calls: [{ id: "g1", tool: "pay", mediation: "REQUIRES_APPROVAL", approval_timeout_seconds: 1 }] }),
    );
    const start = await stub.exec(toBinary(ExecRequestSchema, create(ExecRequestSchema, { inputs: [], config })));
    if (!start.ok) throw new Error(start.message);
    await readAll(start);
    const kinds = () =>
      runInDurableObject(stub, (_o: SessionObject, state) =>
        new Journal(sqlDbFromStorage(state.storage)).read(1n, 0n, 100).map((r) => fromBinary(EventSchema, r.event).kind),
      );
    expect(await kinds()).toEqual([12, 4, 6, 9]);
    expect(await runInDurableObject(stub, (_o: SessionObject, state) => state.storage.getAlarm())).not.toBeNull();
    await runInDurableObject(stub, (o: SessionObject) => o.alarm()); // too early: nothing happens
    expect(await kinds()).toHaveLength(4);
    await new Promise((ok) => setTimeout(ok, 1100));
    await runInDurableObject(stub, (o: SessionObject) => o.alarm());
    await runInDurableObject(stub, (o: SessionObject) => o.alarm()); // at-least-once delivery: a second firing
    expect(await kinds()).toEqual([12, 4, 6, 9, 7, 5, 3, 10]);
  });
});
