/**
 * Audit (the Audit service): walk the chain, check it reaches the head the tenant's Directory
 * anchored (a bare chain cannot show truncation), and optionally replay every completed execution
 * with zero model calls. Never writes.
 * @internal
 */
import type { ChainReport } from "../../proto/verify.js";
import { DEFAULT_HARNESS } from "../../runtimes/builtin/index.js";
import { replayJournal, type ReplayReport } from "../controller/replay.js";
import { notFound } from "./failures.js";
import { success, type Outcome } from "./outcomes.js";
import type { SessionState } from "./session-state.js";

export interface AuditReport {
  chain: ChainReport;
  replay?: ReplayReport;
}

export async function auditSession(s: SessionState, replay: boolean, anchor?: { seq: number; hash: string }): Promise<Outcome<AuditReport>> {
  if (!s.exists()) return notFound();
  const chain = checkAnchor(s.journal.verify(), anchor, (seq) => s.journal.read(seq, seq, 1)[0]?.hash);
  if (!replay) return success({ chain });
  const report = await replayJournal(s.parsedLog(), {
    sessionUid: s.uid,
    describe: s.describer(),
    defaultHarness: DEFAULT_HARNESS,
    models: s.models(),
  });
  return success({ chain, replay: report });
}

function checkAnchor(chain: ChainReport, anchor: { seq: number; hash: string } | undefined, hashAt: (seq: bigint) => string | undefined): ChainReport {
  if (!chain.ok || !anchor || anchor.seq <= 0) return chain;
  const seq = BigInt(anchor.seq);
  if (seq > chain.records) {
    return {
      ...chain,
      ok: false,
      firstBadSeq: chain.records + 1n,
      reason: `the journal ends at seq ${chain.records}, but its head was anchored at seq ${seq}: records are missing`,
    };
  }
  if (hashAt(seq) !== anchor.hash) {
    return { ...chain, ok: false, firstBadSeq: seq, reason: "the record at the anchored head has a different hash than was anchored" };
  }
  return chain;
}
