/**
 * Appends one turn's records under the turn's fence and hands each committed batch to the
 * observer (the Exec stream). A refused append stops the turn with AppendRefusedError.
 */
import type { Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { AppendedRecord, AppendResult, Head } from "../journal/journal.js";
import { AppendRefusedError } from "./errors.js";

/** The session's journal as the controller sees it: projections are applied underneath. */
export interface TurnLog {
  append(events: readonly Event[], opts: { expectedSeq?: bigint; fence: bigint; mintFence?: boolean }): AppendResult;
  head(): Head;
  /** Decoded events with from <= seq <= to (to = 0: head). */
  events(from: bigint, to: bigint): Event[];
}

export type RecordObserver = (records: readonly AppendedRecord[]) => void;

export class TurnWriter {
  constructor(
    private readonly _log: TurnLog,
    private _fence: bigint,
    private readonly _observe: RecordObserver,
  ) {}

  get fence(): bigint {
    return this._fence;
  }

  /** Appends at head under the turn's fence; throws AppendRefusedError when refused. */
  append(events: readonly Event[]): AppendedRecord[] {
    const r = this._log.append(events, { fence: this._fence });
    if (!r.ok) throw new AppendRefusedError(r);
    this._observe(r.records);
    return r.records;
  }

  /** The turn's first append: CAS on `expectedSeq` and a freshly minted fence, in one transaction. */
  open(events: readonly Event[], expectedSeq: bigint | undefined): AppendResult {
    const r = this._log.append(events, { expectedSeq, fence: this._fence, mintFence: true });
    if (r.ok) {
      this._fence = r.fence;
      this._observe(r.records);
    }
    return r;
  }
}
