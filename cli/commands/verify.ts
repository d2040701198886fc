/**
 * `agentctl verify`: fetches a session's whole journal with Replay and checks it locally: every
 * seq, every prev_hash link, every content hash recomputed from the served event (docs/contract.md
 * §7.1, proto/verify.ts). The server is not trusted to vouch for itself.
 *
 * With --replay it also asks the host's Audit.Verify to re-run every completed execution against
 * the journal: the outputs must come back as recorded with zero model calls. The server's own chain
 * verdict is printed when it disagrees with the local one; it checks against the head the tenant's
 * Directory anchored, so it catches a truncated journal that a replayed prefix cannot show.
 * A deleted session fails not_found with the host's tombstone (when and at which head).
 * Every blob a record references (docs/blobs.md) is fetched and its SHA-256 and length checked
 * against the reference, so a changed blob fails as a changed record does. With --export FILE it
 * checks an export offline instead (cli/verify-export.ts).
 * Exit 1 when any check fails. Tested in test/node/cli/cli.test.ts and resume-verify.test.ts.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { VerifyResponse } from "../../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { EventSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ChainVerifier, servedRecordOf, type ChainReport } from "../../proto/verify.js";
import { blobRefsOf, mayHoldBlobRefs, type BlobReference } from "../../proto/blob-ref.js";
import { decodeBinary } from "../../proto/binary-reader.js";
import { sessionArg } from "../args.js";
import { createProgress } from "../progress.js";
import { verifyExport } from "../verify-export.js";
import { writeJsonLine, type Command, type CommandContext } from "../command.js";

export const verifyCommand: Command = {
  name: "verify",
  summary: "recompute a session's hash chain locally; --replay re-runs its turns on the host",
  synopsis: "verify --session UID [--replay] | verify --export FILE",
  help: [
    "--session UID    the session (or give it as the argument)",
    "--replay         also have the host re-run every completed turn from the journal (Audit.Verify):",
    "                 fails unless every output is re-produced with 0 model calls",
    "--export FILE    check an export offline instead (agentctl export): every chain in FILE and",
    "                 every blob it references in blobs/ beside it; no server is contacted",
  ],
  flags: { session: "string", replay: "boolean", export: "string" },

  async run(ctx, args) {
    const file = args.strings.get("export");
    if (file) return verifyExport(ctx, file);
    const uid = sessionArg(args);
    const { chain: rep, blobs } = await verifyLocally(ctx, uid);
    if (!ctx.json) {
      ctx.out.write(chainLine(rep) + "\n");
      if (blobs.checked > 0 || blobs.problem) ctx.out.write(blobs.problem ? `BLOB TAMPERED: ${blobs.problem}\n` : `BLOBS VERIFIED ${blobs.checked} blobs\n`);
    }
    const audit = args.booleans.has("replay") ? await ctx.client().verify(uid, { replay: true }) : undefined;
    const serverDiffers = audit !== undefined && disagrees(rep, audit);
    const replayOk = audit === undefined || (audit.replayOk && audit.modelCalls === 0n);
    const ok = rep.ok && blobs.problem === "" && (audit === undefined || (audit.chainOk && audit.blobsOk)) && replayOk;

    if (ctx.json) {
      writeJsonLine(ctx, {
        session: uid,
        ok,
        records: rep.records.toString(),
        headHash: rep.headHash,
        ...(rep.ok ? {} : { firstBadSeq: rep.firstBadSeq.toString(), reason: rep.reason }),
        blobs: { checked: String(blobs.checked), ok: blobs.problem === "", ...(blobs.problem ? { problem: blobs.problem } : {}) },
        ...(audit === undefined ? {} : { server: serverJson(audit), replay: replayJson(audit) }),
      });
      return ok ? 0 : 1;
    }
    if (audit === undefined) return ok ? 0 : 1;
    if (serverDiffers) ctx.out.write(`server: ${serverChainLine(audit)}\n`);
    if (!audit.blobsOk) ctx.out.write(`server: BLOB TAMPERED: ${audit.blobDetail}\n`);
    ctx.out.write(replayLine(audit) + "\n");
    // One output per line; JSON-quoted so a multi-line answer cannot pass for another line.
    audit.outputs.forEach((o, i) => ctx.out.write(`  output ${i + 1}: ${JSON.stringify(o)}\n`));
    return ok ? 0 : 1;
  },
};

async function verifyLocally(ctx: CommandContext, uid: string): Promise<{ chain: ChainReport; blobs: { checked: number; problem: string } }> {
  const v = new ChainVerifier();
  const refs = new Map<string, bigint>();
  const progress = createProgress(ctx, "verifying: record %d");
  let n = 0;
  try {
    // Each record is taken apart and hashed from its bytes, not decoded (proto/jcs-binary.ts): the
    // work this command does per record, in a process too short for decoding code to warm up.
    for await (const batch of ctx.client().replayEncoded(uid)) {
      for (const encoded of batch) {
        const r = servedRecordOf(encoded);
        // A record served without an event is hashed as the empty event, so it fails unless it was one.
        v.pushServed(r);
        if (mayHoldBlobRefs(r.event)) for (const ref of blobRefsIn(r.event)) if (!refs.has(ref.sha256)) refs.set(ref.sha256, r.seq);
      }
      progress.update((n += batch.length));
    }
  } catch (e) {
    throw await explainNotFound(ctx, uid, e);
  } finally {
    progress.end();
  }
  // Each blob is fetched and hashed here (getBlob refuses one whose SHA-256 differs), not taken on
  // the server's word. The references themselves are covered by the chain just checked.
  let checked = 0;
  for (const [sha, seq] of refs) {
    try {
      await ctx.client().getBlob(uid, sha);
      checked++;
    } catch (e) {
      const why = e instanceof ConnectError ? e.rawMessage : String(e);
      return { chain: v.report(), blobs: { checked, problem: `blob sha256:${sha} (first referenced at seq ${seq}): ${why}` } };
    }
  }
  return { chain: v.report(), blobs: { checked, problem: "" } };
}

/** The references an event's bytes hold; none when they do not decode (the chain check reports that). */
function blobRefsIn(event: Uint8Array): BlobReference[] {
  try {
    return blobRefsOf(decodeBinary(EventSchema, event));
  } catch {
    return [];
  }
}

/**
 * Replay of a deleted session is a bare NOT_FOUND; Audit.Verify keeps the tombstone and says when
 * it was deleted and what its final head was, which is what an auditor asking `verify` wants.
 * Any other answer (a host without Audit, a transport failure) keeps the original error.
 */
async function explainNotFound(ctx: CommandContext, uid: string, e: unknown): Promise<unknown> {
  if (!(e instanceof ConnectError) || e.code !== Code.NotFound) return e;
  try {
    await ctx.client().verify(uid);
  } catch (audit) {
    if (audit instanceof ConnectError && audit.code === Code.NotFound) return audit;
  }
  return e;
}

function chainLine(rep: ChainReport): string {
  return rep.ok ? `VERIFIED ${rep.records} records head=${rep.headHash}` : `TAMPERED at seq ${rep.firstBadSeq}: ${rep.reason}`;
}

function serverChainLine(a: VerifyResponse): string {
  if (a.chainOk) return `VERIFIED ${a.records} records head=${a.headHash}`;
  const at = a.firstBadSeq !== 0n ? ` at seq ${a.firstBadSeq}` : "";
  return `TAMPERED${at}: ${a.chainDetail || "chain check failed"}`;
}

/**
 * The two verdicts differ, or both pass on different heads. The latter can be an honest race (a
 * turn committed between our Replay and the Audit call), so it is shown but not by itself a failure.
 */
function disagrees(rep: ChainReport, a: VerifyResponse): boolean {
  if (rep.ok !== a.chainOk) return true;
  if (rep.ok) return rep.records !== a.records || rep.headHash !== a.headHash;
  return rep.firstBadSeq !== a.firstBadSeq;
}

function replayLine(a: VerifyResponse): string {
  const calls = `${a.modelCalls} model call${a.modelCalls === 1n ? "" : "s"}`;
  const outputs = `${a.outputs.length} output${a.outputs.length === 1 ? "" : "s"}`;
  if (a.replayOk && a.modelCalls === 0n) return `REPLAYED ${outputs}, ${calls}`;
  const why = a.divergence || (a.replayOk ? "the replay called the model (invariant I1)" : "the replay failed");
  return `REPLAY FAILED after ${outputs}, ${calls}: ${why}`;
}

function serverJson(a: VerifyResponse): Record<string, unknown> {
  return {
    chainOk: a.chainOk,
    blobsOk: a.blobsOk,
    blobsChecked: a.blobsChecked.toString(),
    ...(a.blobsOk ? {} : { blobDetail: a.blobDetail }),
    records: a.records.toString(),
    headHash: a.headHash,
    ...(a.chainOk ? {} : { firstBadSeq: a.firstBadSeq.toString(), chainDetail: a.chainDetail }),
  };
}

function replayJson(a: VerifyResponse): Record<string, unknown> {
  return { ok: a.replayOk && a.modelCalls === 0n, outputs: a.outputs, modelCalls: a.modelCalls.toString(), divergence: a.divergence };
}
