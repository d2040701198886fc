/**
 * `agentctl verify --export FILE`: checks an export (`agentctl export`) offline, with no host: the
 * chain of every session in the SQLite file (seqs, prev_hash links, content hashes recomputed from
 * the stored event bytes), and every blob a record references against `blobs/<sha256>` beside it
 * (present, its length, its SHA-256). Exit 1 when anything fails. Tested in
 * test/node/integration/blobs.test.ts.
 */
import { readFileSync } from "node:fs";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { blobRefsOf, type BlobReference } from "../proto/blob-ref.js";
import { EventSchema } from "../proto/gen/agentsessions/v1/common_pb.js";
import type { ContentHash } from "../proto/canon.js";
import { ChainVerifier } from "../proto/verify.js";
import { blobsDirOf, hashFile } from "./blob-files.js";
import { writeJsonLine, type CommandContext } from "./command.js";

interface Row {
  session: string;
  seq: number;
  prev_hash: string;
  hash: string;
  event: Uint8Array;
}

export async function verifyExport(ctx: CommandContext, file: string): Promise<number> {
  if (!existsSync(file)) throw new Error(`${file} does not exist: pass the SQLite file agentctl export wrote`);
  // Loaded here, not at start: sql.js is large and only export and offline verify use it.
  const SQL = await (await import("sql.js")).default();
  const db = new SQL.Database(readFileSync(file));
  const rows: Row[] = [];
  try {
    const st = db.prepare("SELECT session, seq, prev_hash, hash, event FROM events ORDER BY session, seq");
    while (st.step()) rows.push(st.getAsObject() as unknown as Row);
    st.free();
  } finally {
    db.close();
  }
  let ok = true;
  const refs = new Map<string, { ref: BlobReference; seq: number; session: string }>();
  const sessions = [...new Set(rows.map((r) => r.session))];
  for (const session of sessions) {
    const v = new ChainVerifier();
    for (const r of rows.filter((x) => x.session === session)) {
      const event = fromBinary(EventSchema, r.event);
      v.push({ seq: BigInt(r.seq), prevHash: r.prev_hash as ContentHash, hash: r.hash as ContentHash, event });
      for (const ref of blobRefsOf(event)) if (!refs.has(ref.sha256)) refs.set(ref.sha256, { ref, seq: r.seq, session });
    }
    const rep = v.report();
    ok &&= rep.ok;
    const line = rep.ok ? `VERIFIED ${session}: ${rep.records} records head=${rep.headHash}` : `TAMPERED ${session} at seq ${rep.firstBadSeq}: ${rep.reason}`;
    if (ctx.json) writeJsonLine(ctx, { session, ok: rep.ok, records: rep.records.toString(), headHash: rep.headHash, reason: rep.reason ?? "" });
    else ctx.out.write(line + "\n");
  }
  const dir = blobsDirOf(file);
  const problems: string[] = [];
  for (const { ref, seq, session } of refs.values()) {
    const where = `blob sha256:${ref.sha256} (${session} seq ${seq})`;
    const path = join(dir, ref.sha256);
    if (!existsSync(path)) {
      problems.push(`${where} is missing from ${dir}`);
      continue;
    }
    const got = await hashFile(path);
    if (got.bytes !== ref.bytes) problems.push(`${where} is ${got.bytes} bytes, its reference says ${ref.bytes}`);
    else if (got.sha256 !== ref.sha256) problems.push(`${where} does not match its digest: the file was changed`);
  }
  ok &&= problems.length === 0;
  if (ctx.json) writeJsonLine(ctx, { blobs: String(refs.size), blobsOk: problems.length === 0, problems });
  else if (problems.length === 0) ctx.out.write(`BLOBS VERIFIED ${refs.size} blobs in ${dir}\n`);
  else for (const p of problems) ctx.out.write(`BLOB TAMPERED: ${p}\n`);
  return ok ? 0 : 1;
}
