/**
 * Tamper evidence end to end: journal a turn on a host of its own, stop it, change the text of
 * the OUTPUT record's stored event in the Durable Object's SQLite file, restart, and expect
 * `agentctl verify` to name seq 4 (docs/contract.md §7.1; docs/behaviour.md §7.5 step 7). Then truncate a
 * journal the same way, which a local check of the served prefix cannot see but `verify --replay`
 * reports from the server's check against the head its Directory anchored.
 *
 * Wrangler keeps Durable Object SQLite files in `<persist>/v3/do/<script>-SessionObject/*.sqlite`,
 * in WAL mode. After a graceful stop the -wal files are still there and may hold a session's only
 * copy of its rows (seen: a one-page main file with ten committed frames in the WAL), so the file
 * is read with its WAL folded in (sqlite-wal.ts) and the -wal/-shm pair is removed after the edit;
 * otherwise SQLite would replay the old frames over it on restart.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import initSqlJs from "sql.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { textOf } from "../../../proto/messages.js";
import { Journal } from "../../../objects/journal/journal.js";
import { shortForm } from "../../../objects/journal/stored-event.js";
import { createTestDb } from "../support/sqljs-db.js";
import { type Host, startHost } from "../support/host.js";
import { agentctl, sessionOf } from "./run-agentctl.js";
import { foldWal } from "./sqlite-wal.js";

const SQL = await initSqlJs();

interface SessionFile {
  path: string;
  /** The database with any WAL folded in. */
  bytes: Uint8Array;
}

/** The SQLite file of the SessionObject whose meta row names `uid`. */
function findSessionFile(persistDir: string, uid: string): SessionFile {
  const doDir = join(persistDir, "v3", "do");
  const matches: SessionFile[] = [];
  for (const dir of readdirSync(doDir).filter((d) => d.endsWith("-SessionObject"))) {
    for (const name of readdirSync(join(doDir, dir)).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
      const path = join(doDir, dir, name);
      const wal = existsSync(path + "-wal") ? readFileSync(path + "-wal") : new Uint8Array();
      const bytes = foldWal(readFileSync(path), wal).db;
      const db = new SQL.Database(bytes);
      try {
        const hasMeta = db.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").length > 0;
        if (hasMeta && db.exec("SELECT uid FROM meta")[0]?.values[0]?.[0] === uid) matches.push({ path, bytes });
      } finally {
        db.close();
      }
    }
  }
  expect(matches.length, `exactly one SessionObject file holds ${uid}`).toBe(1);
  return matches[0]!;
}

function eventBlobs(bytes: Uint8Array): Uint8Array[] {
  const db = new SQL.Database(bytes);
  try {
    return (db.exec("SELECT event FROM events ORDER BY seq")[0]?.values ?? []).map((row) => row[0] as Uint8Array);
  } finally {
    db.close();
  }
}

/** A SessionObject file's events as its journal reads them: short rows made whole (objects/journal/stored-event.ts). */
function journalEvents(bytes: Uint8Array): Uint8Array[] {
  const db = createTestDb(bytes);
  try {
    return new Journal(db).read(1n, 0n, 1_000_000).map((r) => r.event);
  } finally {
    db.raw.close();
  }
}

/** Rewrites "echo:hello" as "echo:jello" inside seq 4's stored event, keeping it decodable. */
function tamperOutput(file: SessionFile): void {
  const db = new SQL.Database(file.bytes);
  try {
    const blob = db.exec("SELECT event FROM events WHERE seq = 4")[0]?.values[0]?.[0] as Uint8Array;
    const at = Buffer.from(blob).indexOf("echo:hello");
    expect(at, "seq 4 stores the echo output").toBeGreaterThan(0);
    const changed = Uint8Array.from(blob);
    changed[at + 5] = "j".charCodeAt(0);
    // A short row (stored without its execution id) decodes from after its marker.
    const ev = fromBinary(EventSchema, changed.subarray(shortForm(changed)?.rest ?? 0));
    expect(ev.body.case === "message" ? textOf(ev.body.value) : "").toBe("echo:jello");
    db.run("UPDATE events SET event = ? WHERE seq = 4", [changed]);
    const out = db.export();
    // sql.js writes the file in rollback-journal mode; give it back the WAL mode bytes it had.
    out[18] = file.bytes[18]!;
    out[19] = file.bytes[19]!;
    writeFileSync(file.path, out);
  } finally {
    db.close();
  }
  rmSync(file.path + "-wal", { force: true });
  rmSync(file.path + "-shm", { force: true });
}

/** Deletes every stored record after `seq`: a truncated journal whose remaining chain is intact. */
function truncateAfter(file: SessionFile, seq: number): void {
  const db = new SQL.Database(file.bytes);
  try {
    db.run("DELETE FROM events WHERE seq > ?", [seq]);
    const out = db.export();
    out[18] = file.bytes[18]!;
    out[19] = file.bytes[19]!;
    writeFileSync(file.path, out);
  } finally {
    db.close();
  }
  rmSync(file.path + "-wal", { force: true });
  rmSync(file.path + "-shm", { force: true });
}

describe("agentctl verify on tampered storage", () => {
  // One host for both cases: each edits only its own session's file while the host is stopped.
  let host: Host;
  beforeAll(async () => {
    host = await startHost();
  });
  afterAll(async () => {
    await host?.stop();
  });

  it("verify: a byte changed in a stored event is reported at its seq, exit 1", { timeout: 180_000 }, async () => {
    const S = ["--server", host.url];
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    expect((await agentctl([...S, "verify", uid])).stdout).toMatch(/^VERIFIED 5 records /);

    const exported = join(host.server.persistDir, "export.sqlite");
    expect((await agentctl([...S, "export", uid, "--out", exported])).code).toBe(0);

    await host.server.stop();
    const file = findSessionFile(host.server.persistDir, uid);
    // export writes the exact stored event bytes, not a re-encoding that happens to verify.
    expect(eventBlobs(readFileSync(exported))).toEqual(journalEvents(file.bytes));
    tamperOutput(file);
    await host.restart();

    // The restarted server reads the edited row (so the edit landed and no WAL undid it) ...
    const replay = await agentctl([...S, "replay", uid, "--from", "4", "--to", "4"]);
    expect(replay.lines).toEqual(["seq=4  EVENT_OUTPUT  assistant: echo:jello"]);
    // ... and the chain no longer holds from seq 4.
    const r = await agentctl([...S, "verify", "--session", uid]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("TAMPERED at seq 4: content_hash does not match the recomputed hash\n");
    // The server's own check agrees (so it is not printed again); the exit status stays 1.
    const withReplay = await agentctl([...S, "verify", "--session", uid, "--replay"]);
    expect(withReplay.code, withReplay.stderr).toBe(1);
    expect(withReplay.lines[0]).toBe("TAMPERED at seq 4: content_hash does not match the recomputed hash");
    expect(withReplay.lines.filter((l) => l.startsWith("server:"))).toEqual([]);
  });

  it("verify --replay: a truncated journal passes locally but the server's anchored head fails it, exit 1", { timeout: 180_000 }, async () => {
    const S = ["--server", host.url];
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    await host.server.stop();
    truncateAfter(findSessionFile(host.server.persistDir, uid), 4);
    await host.restart();

    const r = await agentctl([...S, "verify", uid, "--replay"]);
    expect(r.code).toBe(1);
    expect(r.lines[0]).toMatch(/^VERIFIED 4 records head=[0-9a-f]{64}$/);
    expect(r.lines[1]).toBe("server: TAMPERED at seq 5: the journal ends at seq 4, but its head was anchored at seq 5: records are missing");
    const j = await agentctl([...S, "--json", "verify", uid, "--replay"]);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: false, records: "4", server: { chainOk: false, firstBadSeq: "5" } });
  });
});
