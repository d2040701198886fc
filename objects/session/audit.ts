/**
 * Audit (the Audit service): walk the chain, check it reaches the head the tenant's Directory
 * anchored (a bare chain cannot show truncation), and optionally replay every completed execution
 * with zero model calls. Never writes.
 * @internal
 */
import type { ChainReport } from "../../proto/verify.js";
import { DEFAULT_HARNESS } from "../../runtimes/builtin/index.js";
import { checkBlob } from "../blobs/blob-store.js";
import { parseExecutions } from "../controller/execution-log.js";
import { replayJournal, type ReplayReport } from "../controller/replay.js";
import { notFound } from "./failures.js";
import { success, type Outcome } from "./outcomes.js";
import type { SessionState } from "./state.js";

export interface AuditReport {
  chain: ChainReport;
  replay?: ReplayReport;
  /** Every referenced blob is stored with the length and SHA-256 its reference names (docs/blobs.md). */
  blobs: BlobsReport;
}

export interface BlobsReport {
  ok: boolean;
  checked: number;
  /** The first blob that is missing or does not match, and the seq that first names it. */
  detail: string;
}

export async function auditSession(s: SessionState, replay: boolean, anchor?: { seq: number; hash: string }): Promise<Outcome<AuditReport>> {
  if (!s.exists()) return notFound();
  const chain = checkAnchor(s.journal.verify(), anchor, (seq) => s.journal.read(seq, seq, 1)[0]?.hash);
  const blobs = await checkBlobs(s);
  if (!replay) return success({ chain, blobs });
  // Replay serves the harness what it was served live: blob references resolved (when they can be).
  const resolved = blobs.ok ? await s.resolvedEvents() : undefined;
  const report = await replayJournal(resolved ? parseExecutions(resolved) : s.cache.parsed(), {
    sessionUid: s.uid,
    describe: s.describer(),
    defaultHarness: DEFAULT_HARNESS,
    models: s.models(),
  });
  return success({ chain, replay: report, blobs });
}

/**
 * Reads every blob the journal references, streaming it through SHA-256 (a 50 MB blob is never
 * held whole), and compares length and digest with the reference. The hash chain already covers
 * each reference; this shows the bytes it names are the bytes stored.
 */
async function checkBlobs(s: SessionState): Promise<BlobsReport> {
  const rows = s.blobIndex.upTo(0n);
  const store = s.d.blobs?.store;
  if (rows.length === 0) return { ok: true, checked: 0, detail: "" };
  if (!store) return { ok: false, checked: 0, detail: `the journal references ${rows.length} blobs, but this host has no BLOBS bucket bound` };
  const tenant = s.meta.load()!.tenant;
  let checked = 0;
  for (const r of rows) {
    const c = await checkBlob(store, tenant, r.sha256);
    checked++;
    const where = `blob sha256:${r.sha256} (first referenced at seq ${r.seq})`;
    if (!c.found) return { ok: false, checked, detail: `${where} is missing from the blob store` };
    if (c.bytes !== r.bytes) return { ok: false, checked, detail: `${where} is ${c.bytes} bytes, its reference says ${r.bytes}` };
    if (c.sha256 !== r.sha256) return { ok: false, checked, detail: `${where} does not match its digest: the stored bytes were changed` };
  }
  return { ok: true, checked, detail: "" };
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
