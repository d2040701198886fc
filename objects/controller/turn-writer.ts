/**
 * Appends one turn's records under the turn's fence and hands each committed batch to the
 * observer (the Exec stream). A refused append stops the turn with AppendRefusedError.
 *
 * Records may also be staged: prepared (checked and encoded) now, committed with the turn's next
 * append. The live sink stages what nothing outside the object can see before the next commit:
 * a sink-only harness's OUTPUT and USAGE, a host-run model's MODEL_CALL (docs/behaviour.md §1.5,
 * "When records commit"). Every commit carries the staged records first, in order, so the journal
 * is exactly what appending them one by one would have written; only the number of commits drops.
 * A sink-only harness's turn stages even its opening records (EXECUTION_START and the INPUTs): its
 * first commit then carries the turn's CAS and mints its fence, so an echo turn commits once.
 */
import type { Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { AppendedRecord, AppendResult, Head, Prepared, PreparedEvent } from "../journal/journal.js";
import { AppendRefusedError, type AppendRefusal } from "./errors.js";

/**
 * Stores the parts of events that are over the inline limit as blobs and returns the events with
 * references in their place (objects/blobs/blob-writer.ts, docs/blobs.md). Resolves only once
 * every blob is stored, so a record never commits before the bytes it names.
 */
export interface EventExternalizer {
  externalize(events: readonly Event[]): Promise<readonly Event[]>;
}

/** Where a turn's append goes: CAS on `expectedSeq`, under `fence`, or minting the next one. */
type CommitOptions = { expectedSeq?: bigint; fence: bigint; mintFence?: boolean };

/** The session's journal as the controller sees it: projections are applied underneath. */
export interface TurnLog {
  append(events: readonly Event[], opts: CommitOptions): AppendResult;
  head(): Head;
  /** Decoded events with from <= seq <= to (to = 0: head). */
  events(from: bigint, to: bigint): Event[];
  /**
   * The history of an execution that starts after seq `to`: bounded at the latest compaction point
   * (runtimes/compaction.ts boundHistory over events(1, to)), without copying the journal first.
   */
  history?(to: bigint): Event[];
  /** Checks and encodes events without writing (Journal.prepare); without it nothing is staged. */
  prepare?(events: readonly Event[]): Prepared;
  /** Appends prepared events, as `append` appends events. */
  commit?(prepared: readonly PreparedEvent[], opts: CommitOptions): AppendResult;
}

export type RecordObserver = (records: readonly AppendedRecord[]) => void;

export class TurnWriter {
  private _staged: PreparedEvent[] = [];
  /** The opening records are staged: the next commit carries the CAS and mints the fence. */
  private _opening: { expectedSeq?: bigint } | undefined;
  /** The commit of the staged opening failed: the turn wrote nothing and may write nothing more. */
  private _stopped: Error | undefined;

  constructor(
    private readonly _log: TurnLog,
    private _fence: bigint,
    private readonly _observe: RecordObserver,
    private readonly _blobs?: EventExternalizer,
  ) {}

  /** `events` with their large parts stored as blobs (EventExternalizer); unchanged without a store. */
  externalize(events: readonly Event[]): Promise<readonly Event[]> | readonly Event[] {
    return this._blobs ? this._blobs.externalize(events) : events;
  }

  get fence(): bigint {
    return this._fence;
  }

  /** Appends at head under the turn's fence, after whatever is staged; throws AppendRefusedError when refused. */
  append(events: readonly Event[]): AppendedRecord[] {
    this._checkStopped();
    const { prepare, commit } = this._log;
    if (this._staged.length === 0 || !prepare || !commit) return this._done(this._log.append(events, { fence: this._fence }));
    const p = prepare(events);
    if (!p.ok) throw new AppendRefusedError(p);
    const all = [...this._staged, ...p.events];
    this._staged = [];
    return this._commit(all);
  }

  /**
   * Holds `events` back until the turn's next commit. They are checked now: one that could not be
   * stored throws AppendRefusedError here, as an append would. Without staging, they are appended.
   */
  stage(events: readonly Event[]): void {
    this._checkStopped();
    if (!this._log.prepare || !this._log.commit) {
      this.append(events);
      return;
    }
    const p = this._log.prepare(events);
    if (!p.ok) throw new AppendRefusedError(p);
    this._staged.push(...p.events);
  }

  /** Commits whatever is staged (nothing when nothing is). */
  flush(): void {
    this._checkStopped();
    if (this._staged.length === 0) return;
    const staged = this._staged;
    this._staged = [];
    this._commit(staged);
  }

  /**
   * The turn's first records, under CAS on `expectedSeq` and a freshly minted fence: appended in
   * one transaction, or, with `staged` (a sink-only harness), staged for the turn's first commit,
   * which then carries the CAS and mints the fence. Either way a head other than `expectedSeq`, or
   * a record that could not be stored, is refused here, before the harness runs.
   */
  open(events: readonly Event[], expectedSeq: bigint | undefined, staged = false): { ok: true } | AppendRefusal {
    const { prepare, commit } = this._log;
    if (staged && prepare && commit) {
      const head = this._log.head().seq;
      if (expectedSeq !== undefined && expectedSeq !== head) return { ok: false, reason: "conflict", head, expected: expectedSeq };
      const p = prepare(events);
      if (!p.ok) return p;
      this._staged.push(...p.events);
      this._opening = { expectedSeq };
      return { ok: true };
    }
    const r = this._log.append(events, { expectedSeq, fence: this._fence, mintFence: true });
    if (r.ok) {
      this._fence = r.fence;
      this._observe(r.records);
    }
    return r;
  }

  private _commitOptions(): CommitOptions {
    const o = this._opening;
    return o ? { expectedSeq: o.expectedSeq, fence: this._fence, mintFence: true } : { fence: this._fence };
  }

  private _checkStopped(): void {
    if (this._stopped) throw this._stopped;
  }

  /** Commits `events` (the staged ones first), with the opening's CAS and fence while it is staged. */
  private _commit(events: readonly PreparedEvent[]): AppendedRecord[] {
    const opening = this._opening !== undefined;
    let r: AppendResult;
    try {
      r = this._log.commit!(events, this._commitOptions());
    } catch (e) {
      // Without its opening records on record, nothing else of the turn may be (an ERROR alone).
      if (opening) this._stopped = e instanceof Error ? e : new Error(String(e));
      throw e;
    }
    this._opening = undefined;
    if (!r.ok) {
      const refused = new AppendRefusedError(r);
      if (opening) this._stopped = refused;
      throw refused;
    }
    if (opening) this._fence = r.fence;
    this._observe(r.records);
    return r.records;
  }

  private _done(r: AppendResult): AppendedRecord[] {
    if (!r.ok) throw new AppendRefusedError(r);
    this._observe(r.records);
    return r.records;
  }
}
