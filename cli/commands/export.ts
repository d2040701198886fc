/**
 * `agentctl export`: writes a session's journal to a standalone SQLite file, one row per record,
 * `event` holding the exact protobuf bytes of the record's Event, so anyone who knows only the
 * contract can re-verify the chain offline (docs/contract.md §7; the check is in
 * test/node/cli/export.test.ts). Built in memory with sql.js and written once. Every blob the
 * records reference is written beside it, `blobs/<sha256>` (docs/blobs.md "Export"), each checked
 * against its digest as it arrives.
 */
import { writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { EventSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { blobRefsOf, type BlobReference } from "../../proto/blob-ref.js";
import { sessionArg, UsageError } from "../args.js";
import { blobsDirOf, downloadBlob } from "../blob-files.js";
import { writeJsonLine, type Command } from "../command.js";
import { createProgress } from "../progress.js";

const EXPORT_SCHEMA = `CREATE TABLE events (
  session TEXT NOT NULL,
  seq INTEGER NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  event BLOB NOT NULL,
  PRIMARY KEY (session, seq)
)`;

export const exportCommand: Command = {
  name: "export",
  summary: "write a session's journal to a SQLite file, and its blobs to blobs/ beside it",
  synopsis: "export --session UID --out FILE [--force]",
  help: [
    "--session UID    the session (or give it as the argument)",
    "--out FILE       the SQLite file to write; refused if it exists. Blobs the records reference",
    "                 go to blobs/<sha256> in the same directory",
    "--force          overwrite FILE if it exists",
  ],
  flags: { session: "string", out: "string", force: "boolean" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const out = args.strings.get("out");
    if (!out) throw new UsageError("--out FILE is required");
    const force = args.booleans.has("force");
    // Checked before fetching so a long journal is not read for nothing; `wx` below closes the race.
    if (!force && existsSync(out)) throw new Error(`${out} exists: pass --force to overwrite it`);

    // Loaded here, not at start: sql.js is large and only export and offline verify use it.
    const SQL = await (await import("sql.js")).default();
    const db = new SQL.Database();
    let n = 0;
    const refs = new Map<string, BlobReference>();
    const progress = createProgress(ctx, "exporting: record %d");
    try {
      db.run(EXPORT_SCHEMA);
      const insert = db.prepare("INSERT INTO events (session, seq, prev_hash, hash, event) VALUES (?, ?, ?, ?, ?)");
      for await (const r of ctx.client().replay(uid)) {
        const event = toBinary(EventSchema, r.event ?? create(EventSchema));
        insert.run([uid, Number(r.seq), r.prevHash, r.contentHash, event]);
        for (const ref of r.event ? blobRefsOf(r.event) : []) refs.set(ref.sha256, ref);
        progress.update(++n);
      }
      insert.free();
      await writeFile(out, db.export(), { flag: force ? "w" : "wx" });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") throw new Error(`${out} exists: pass --force to overwrite it`);
      throw e;
    } finally {
      progress.end();
      db.close();
    }
    const dir = blobsDirOf(out);
    for (const ref of refs.values()) await downloadBlob(ctx.client(), uid, ref, dir);
    if (ctx.json) writeJsonLine(ctx, { session: uid, records: String(n), out, blobs: String(refs.size) });
    else ctx.out.write(`exported ${n} records to ${out}` + (refs.size > 0 ? ` and ${refs.size} blobs to ${dir}` : "") + "\n");
    return 0;
  },
};
