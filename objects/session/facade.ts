/**
 * The session core hosted by one SessionObject: the facade over the session's operations.
 *
 * Plain TypeScript over a `SqlDb`: the Durable Object class (objects/session/object.ts) only wires
 * storage, clock and configuration and forwards its RPC methods here, and Node tests drive it on
 * sql.js. SQLite is the truth; the only in-memory state is the live turn (the overlap guard, which
 * is global because a Durable Object has exactly one live instance) and caches.
 */
import type { Ending } from "../../proto/record-envelopes.js";
import type { Sha256Hex } from "../../proto/blob-ref.js";
import type { ExecRequest, Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { DirectoryRow } from "../directory/directory-store.js";
import type { StoredRecord } from "../journal/journal.js";
import { approveGate, onApprovalAlarm, type Decision } from "./approvals.js";
import { auditSession, type AuditReport } from "./audit.js";
import { notFound } from "./failures.js";
import { forkBegin, forkChild, type ForkChildStep, forkDiscard, forkFinish, forkSeed, forkSource, type ForkSource } from "./fork.js";
import { packRecords } from "../journal/record-pack.js";
import { cancelSession, deleteSession, suspendSession } from "./lifecycle.js";
import { forkClone, forkRelease, type ForkClone } from "./memory-fork.js";
import { INITIAL_STATES, staticsTooLarge, type SessionMeta } from "./meta-store.js";
import { failure, success, type Failure, type Outcome } from "./outcomes.js";
import type { States } from "./projection.js";
import { migrateSession } from "./schema.js";
import { SessionState, type SessionHostDeps } from "./state.js";
import { recordStream } from "./record-stream.js";
import { resumeSession, startExec, type ExecStart } from "./turns.js";
import type { FrameSinkOptions } from "../exec-frames.js";
import type { Delivery } from "../../runtimes/tunnel/inbox.js";

export type { AuditReport, Decision, ExecStart, ForkClone, ForkSource, SessionHostDeps };
export { DESCRIBE_TIMEOUT_MS } from "./state.js";

export interface CreateArgs {
  tenant: string;
  uid: string;
  /** The static fields (metadata.project/name, harness, model, labels, annotations, origin, identity). */
  statics: Session;
}

/** Largest page of records handed out in one read (a fork's copy, a Replay page). */
const MAX_READ_BYTES = 4 * 1024 * 1024;

export class SessionHost {
  private readonly _s: SessionState;

  constructor(deps: SessionHostDeps) {
    this._s = new SessionState(deps);
  }

  /** Writes the metadata row: no events, no compute (docs/behaviour.md §4.1). */
  async create(args: CreateArgs): Promise<Outcome<Session>> {
    const s = this._s;
    if (s.exists()) return failure("session_exists", `session ${args.uid} already exists`);
    const tooLarge = staticsTooLarge(args.statics);
    if (tooLarge) return failure("metadata_too_large", tooLarge);
    migrateSession(s.d.db);
    const now = s.d.now();
    const meta: SessionMeta = { tenant: args.tenant, uid: args.uid, statics: args.statics, createMs: now, updateMs: now, ...INITIAL_STATES };
    s.d.db.transaction(() => s.meta.insert(meta));
    await s.reports.created();
    return success(s.render());
  }

  get(): Outcome<Session> {
    return this._s.exists() ? success(this._s.render()) : notFound();
  }

  /**
   * ListSessions found this session's Directory row live (directory-reports.ts): the session as
   * it is now, and a row left live by an earlier instance of this object is settled.
   */
  listing(): Outcome<Session> {
    if (!this._s.exists()) return notFound();
    this._s.reports.listed();
    return success(this._s.render());
  }

  /** Records with from <= seq <= to (to = 0: head), at most `limit` and about 4 MiB, verbatim. */
  read(from: bigint, to: bigint, limit: number): Outcome<StoredRecord[]> {
    if (!this._s.exists()) return notFound();
    const rows = this._s.journal.read(from, to, limit);
    let bytes = 0;
    let n = 0;
    while (n < rows.length && (n === 0 || bytes + rows[n]!.event.length <= MAX_READ_BYTES)) bytes += rows[n++]!.event.length;
    return success(rows.slice(0, n));
  }

  /**
   * Records with from <= seq <= to, packed (journal/record-pack.ts), as many as fit in about
   * `maxBytes`, and the seq of the last one: a fork's copy of its prefix.
   */
  readPacked(from: bigint, to: bigint, maxBytes: number): Outcome<{ pack: Uint8Array; last: bigint }> {
    if (!this._s.exists()) return notFound();
    const records: StoredRecord[] = [];
    let bytes = 0;
    for (let at = from < 1n ? 1n : from; at <= to && bytes < maxBytes; ) {
      const page = this._s.journal.read(at, to, 1000);
      if (page.length === 0) break;
      for (const r of page) {
        if (records.length > 0 && bytes + r.event.length > maxBytes) break;
        records.push(r);
        bytes += r.event.length + 100;
      }
      at = records[records.length - 1]!.seq + 1n;
      if (records[records.length - 1] !== page[page.length - 1]) break;
    }
    return success({ pack: packRecords(records), last: records[records.length - 1]?.seq ?? from - 1n });
  }

  /** Records with from <= seq <= to (to = 0: head) as enveloped LogRecords (record-stream.ts). */
  replay(from: bigint, to: bigint, ending: Ending): Outcome<ReadableStream<Uint8Array>> {
    if (!this._s.exists()) return notFound();
    return success(recordStream(this._s.journal, from, to, ending));
  }

  /**
   * Tail (docs/follow.md): the committed records from `from`, then (with `follow`) each record as
   * it commits and the running turn's deltas, as enveloped TailResponses (followers.ts); with
   * `ending`, the whole answer in that protocol.
   */
  tail(from: bigint, follow: boolean, ending?: Ending): Outcome<ReadableStream<Uint8Array>> {
    if (!this._s.exists()) return notFound();
    const head = this._s.journal.head().seq;
    if (from > head + 1n) {
      return failure(
        "past_head",
        `from_seq ${from} is past the session's head (seq ${head}): the next record will be seq ${head + 1n}; Tail from at most that`,
      );
    }
    return success(this._s.followers.open(from, follow, ending));
  }

  /** The session's tenant and uid, for a request line ("" when it does not exist). */
  names(): { tenant: string; uid: string } {
    const meta = this._s.meta.load();
    return { tenant: meta?.tenant ?? "", uid: meta?.uid ?? "" };
  }

  exec(req: ExecRequest, stream: FrameSinkOptions = {}): Promise<ExecStart> {
    return this._orGone(() => startExec(this._s, req, stream));
  }

  /** Whether the turn holding the tenant's execution slot `owner` still runs here (objects/limits). */
  runs(owner: string): boolean {
    return this._s.runs(owner);
  }

  /** An event (or the end) of a tunnel stream; false when no running execution reads that stream. */
  deliver(stream: string, delivery: Delivery): boolean {
    return this._s.inbox.deliver(stream, delivery);
  }

  resume(): Promise<Outcome<Session>> {
    return this._orGone(() => resumeSession(this._s));
  }

  suspend(): Promise<Outcome<Session>> {
    return this._orGone(() => suspendSession(this._s));
  }

  cancel(executionId: string, reason: string): Promise<Outcome<Session>> {
    return this._orGone(() => cancelSession(this._s, executionId, reason));
  }

  delete(tombstone: (final: Session, headHash: string) => Promise<void>): Promise<Outcome<Session>> {
    return deleteSession(this._s, tombstone);
  }

  approve(d: Decision): Outcome<{ session: Session; decision: StoredRecord }> {
    return approveGate(this._s, d);
  }

  /** The object's alarm fired (approval deadlines). */
  alarm(): Promise<void> {
    return onApprovalAlarm(this._s);
  }

  /** A blob this session's journal references (GetBlob's authorization: docs/blobs.md); its length. */
  blob(sha: Sha256Hex): Outcome<{ bytes: number }> {
    if (!this._s.exists()) return notFound();
    const row = this._s.blobIndex.get(sha);
    if (!row) return failure("blob_not_found", `session ${this._s.uid} references no blob sha256:${sha}: read its records for the digests it names`);
    return success({ bytes: row.bytes });
  }

  audit(replay: boolean, anchor?: { seq: number; hash: string }): Promise<Outcome<AuditReport>> {
    return this._orGone(() => auditSession(this._s, replay, anchor));
  }

  forkSource(atSeq: bigint): Promise<Outcome<ForkSource>> {
    return this._orGone(() => forkSource(this._s, atSeq));
  }

  forkChild(step: ForkChildStep): Outcome<{ session: Uint8Array; row: DirectoryRow } | true> {
    return forkChild(this._s, step);
  }

  forkBegin(tenant: string, uid: string, statics: Session): Outcome<true> {
    return forkBegin(this._s, tenant, uid, statics);
  }

  forkSeed(records: StoredRecord[]): Outcome<true> {
    return forkSeed(this._s, packRecords(records));
  }

  forkFinish(atSeq: bigint, states: States, cloned = false, atMs?: number): Outcome<{ session: Uint8Array; row: DirectoryRow }> {
    return forkFinish(this._s, atSeq, states, cloned, atMs);
  }

  /** A memory fork's parent: checkpoint once, then clone every child from that snapshot. */
  forkClone(atSeq: bigint, children: readonly string[]): Promise<Outcome<ForkClone>> {
    return this._orGone(() => forkClone(this._s, atSeq, children));
  }

  /** A memory fork's parent: stops the clones of a fan-out that failed after cloning. */
  forkRelease(children: readonly string[]): Promise<void> {
    return forkRelease(this._s, children);
  }

  forkDiscard(): Promise<void> {
    return forkDiscard(this._s);
  }

  /**
   * DeleteSession erases the storage while an operation that began before it may be waiting at an
   * await (a harness lookup, a describe). Resumed, that operation finds the session's tables gone:
   * it answers NOT_FOUND, not the SQLITE_ERROR that surfaced as INTERNAL (test/node/fuzz).
   */
  private async _orGone<T extends { ok: boolean }>(op: () => Promise<T>): Promise<T | Failure> {
    try {
      return await op();
    } catch (e) {
      if (!this._s.exists()) return notFound();
      throw e;
    }
  }
}
