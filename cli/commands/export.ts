/**
 * `agentctl export`: writes a session's journal to a standalone SQLite file, one row per record,
 * `event` holding the exact protobuf bytes of the record's Event, so anyone who knows only the
 * contract can re-verify the chain offline (CONTRACT.md §7; the check is in
 * test/node/cli/export.test.ts). Built in memory with sql.js and written once.
 */
import { writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import initSqlJs from "sql.js";
import { EventSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { sessionArg, UsageError } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";

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
  summary: "write a session's journal to a SQLite file",
  synopsis: "export --session UID --out FILE [--force]",
  help: [
    "--session UID    the session (or give it as the argument)",
    "--out FILE       the SQLite file to write; refused if it exists",
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

    const SQL = await initSqlJs();
    const db = new SQL.Database();
    let n = 0;
    try {
      db.run(EXPORT_SCHEMA);
      const insert = db.prepare("INSERT INTO events (session, seq, prev_hash, hash, event) VALUES (?, ?, ?, ?, ?)");
      for await (const r of ctx.client().replay(uid)) {
        const event = toBinary(EventSchema, r.event ?? create(EventSchema));
        insert.run([uid, Number(r.seq), r.prevHash, r.contentHash, event]);
        n++;
      }
      insert.free();
      await writeFile(out, db.export(), { flag: force ? "w" : "wx" });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") throw new Error(`${out} exists: pass --force to overwrite it`);
      throw e;
    } finally {
      db.close();
    }
    if (ctx.json) writeJsonLine(ctx, { session: uid, records: String(n), out });
    else ctx.out.write(`exported ${n} records to ${out}\n`);
    return 0;
  },
};
