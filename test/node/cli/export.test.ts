/**
 * `agentctl export`, checked by a verifier written here from the contract alone (docs/contract.md §7.1,
 * §7.2): decode each row's event bytes, proto3-JSON with proto names, JCS via `canonicalize`,
 * SHA-256, and the prev_hash links. It deliberately does not import proto/canon.ts or
 * proto/verify.ts, so a bug shared by the server and those modules cannot hide here.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary, toJson } from "@bufbuild/protobuf";
import canonicalize from "canonicalize";
import initSqlJs from "sql.js";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { agentctl, sessionOf } from "./run-agentctl.js";

const S = ["--server", inject("serverUrl")];
const SQL = await initSqlJs();

interface Row {
  session: string;
  seq: number;
  prev_hash: string;
  hash: string;
  event: Uint8Array;
}

function readRows(file: string): Row[] {
  const db = new SQL.Database(readFileSync(file));
  try {
    const stmt = db.prepare("SELECT session, seq, prev_hash, hash, event FROM events ORDER BY seq");
    const rows: Row[] = [];
    while (stmt.step()) rows.push(stmt.getAsObject() as unknown as Row);
    stmt.free();
    return rows;
  } finally {
    db.close();
  }
}

/** The first seq whose hash or link is wrong, or 0 when the whole chain holds. */
function independentlyVerify(rows: readonly Row[]): number {
  let prev = "";
  let expectedSeq = 1;
  for (const row of rows) {
    if (row.seq !== expectedSeq || row.prev_hash !== prev) return row.seq;
    const event = toJson(EventSchema, fromBinary(EventSchema, row.event), { useProtoFieldName: true });
    const canonical = canonicalize({ event, prev_hash: row.prev_hash, seq: String(row.seq) });
    const hash = createHash("sha256").update(canonical!, "utf8").digest("hex");
    if (hash !== row.hash) return row.seq;
    prev = row.hash;
    expectedSeq++;
  }
  return 0;
}

describe("agentctl export", () => {
  // Made in beforeAll, not while the file is collected: a run that skips every test here (a -t
  // filter) runs no afterAll, and the leak check would find the folder.
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "agentctl-export-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("export: writes one row per record that an independent verifier accepts", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    await agentctl([...S, "exec", "--session", uid, "--input", "second turn"]);
    const out = join(dir, "journal.sqlite");
    const r = await agentctl([...S, "export", "--session", uid, "--out", out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`exported 10 records to ${out}\n`);

    const rows = readRows(out);
    expect(rows.map((x) => x.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(new Set(rows.map((x) => x.session))).toEqual(new Set([uid]));
    expect(independentlyVerify(rows)).toBe(0);
    // The head agrees with what the server-side chain reports through agentctl verify.
    const v = await agentctl([...S, "verify", uid]);
    expect(v.stdout).toBe(`VERIFIED 10 records head=${rows[9]!.hash}\n`);
  });

  it("export: the independent verifier catches a changed event byte", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const out = join(dir, "tampered.sqlite");
    expect((await agentctl([...S, "export", "--session", uid, "--out", out])).code).toBe(0);
    const rows = readRows(out);
    const row4 = rows[3]!;
    const at = Buffer.from(row4.event).indexOf("echo:hello");
    expect(at).toBeGreaterThan(0);
    const changed = Uint8Array.from(row4.event);
    changed[at + 5] = "j".charCodeAt(0);
    expect(independentlyVerify([...rows.slice(0, 3), { ...row4, event: changed }, ...rows.slice(4)])).toBe(4);
  });

  it("export: refuses to overwrite an existing file unless --force", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const out = join(dir, "exists.sqlite");
    writeFileSync(out, "keep me");
    const refused = await agentctl([...S, "export", "--session", uid, "--out", out]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("pass --force");
    expect(readFileSync(out, "utf8")).toBe("keep me");
    const forced = await agentctl([...S, "export", "--session", uid, "--out", out, "--force"]);
    expect(forced.code).toBe(0);
    expect(readRows(out).length).toBe(5);
  });
});
