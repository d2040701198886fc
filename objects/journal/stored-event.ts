/**
 * How an event's bytes are kept in `events.event`: most records of a turn name the same
 * execution, so a row may leave out its execution id where a row before it holds that id.
 *
 * - A whole row is the Event's deterministic binary, exactly the bytes served and decoded. It never
 *   starts with 0x00: that is field 0, which protobuf does not have.
 * - A short row is `0x00`, a varint distance d >= 1, then the Event's bytes after its leading
 *   `execution_id` field (field 2, the first the deterministic encoding writes: field 1 is
 *   reserved). The row at seq - d is whole and starts with that same field: the event is that
 *   field followed by the rest. A 16-hex-character id takes 18 bytes and the marker 2, so an echo
 *   turn's five records keep about 64 bytes less (docs/performance.md, storage).
 *
 * The hash is of the event, not of what is stored, so nothing about the chain changes: a reader
 * makes each row whole again (Journal._page) before anyone sees it. A short row whose row at seq
 * - d is missing or not whole stays as it is stored, which no decoder accepts: a reader reports
 * the record as broken rather than guess its id. Tested in test/node/journal/stored-event.test.ts.
 */

/** The field tag of `Event.execution_id` (field 2, length-delimited). */
const ID_TAG = 0x12;
const SHORT = 0x00;

/** Execution ids the writer remembers the whole row of: the latest few (a turn's, a cut one's). */
const REMEMBERED = 8;

/**
 * Where `event`'s leading execution_id field ends (its tag, one-byte length and the id), or 0
 * when it does not start with one a short row can leave out.
 */
export function idFieldEnd(event: Uint8Array): number {
  if (event[0] !== ID_TAG) return 0;
  const len = event[1];
  if (len === undefined || len === 0 || len > 0x7f) return 0;
  return 2 + len <= event.length ? 2 + len : 0;
}

/** A short row's distance back to its whole row and where the rest of its event starts; undefined for a whole row. */
export function shortRef(stored: Uint8Array): { distance: number; rest: number } | undefined {
  const rest = shortRest(stored);
  return rest === 0 ? undefined : { distance: shortDistance(stored), rest };
}

/** Where the rest of a short row's event starts (after its marker and distance); 0 for a whole row. */
export function shortRest(stored: Uint8Array): number {
  if (stored.length === 0 || stored[0] !== SHORT) return 0;
  for (let at = 1; at < stored.length && at < 8; at++) if ((stored[at]! & 0x80) === 0) return shortDistance(stored) >= 1 ? at + 1 : 0;
  return 0;
}

/** A short row's distance back to its whole row (read after `shortRest` said it is one). */
export function shortDistance(stored: Uint8Array): number {
  let distance = 0;
  let mul = 1;
  for (let at = 1; at < stored.length && at < 8; at++) {
    const b = stored[at]!;
    distance += (b & 0x7f) * mul;
    if ((b & 0x80) === 0) return distance;
    mul *= 128;
  }
  return 0;
}

/** The execution id field a whole row lends the short rows that point at it; undefined when it has none. */
export function lentField(whole: Uint8Array): Uint8Array | undefined {
  const end = idFieldEnd(whole);
  return end === 0 ? undefined : whole.subarray(0, end);
}

/** A short row's event: the lent id field, then the rest of its stored bytes. */
export function joined(field: Uint8Array, rest: Uint8Array): Uint8Array {
  const out = new Uint8Array(field.length + rest.length);
  out.set(field, 0);
  out.set(rest, field.length);
  return out;
}

/**
 * The writer's side: which rows this journal stored whole, by execution id, so the next record of
 * the same execution can point back at one. Memory only, and only rows whose transaction
 * committed: the journal calls `forget` when a transaction fails, and a new Journal (an object
 * that starts, a storage erased underneath) starts empty, so its first row of each execution is
 * stored whole again.
 */
export class ShortRows {
  private readonly _whole = new Map<string, number>();
  /** The id field of the last row looked up, and where it is stored whole: most records are of the execution before them. */
  private _lastField: Uint8Array | undefined;
  private _lastAt = 0;

  /** What to store for `event` at `seq`. */
  stored(seq: number, event: Uint8Array): Uint8Array {
    const end = idFieldEnd(event);
    if (end === 0) return event;
    let at: number | undefined;
    let id: string | undefined;
    if (this._lastField !== undefined && sameField(this._lastField, event, end)) at = this._lastAt;
    else {
      id = latin1(event, 2, end);
      at = this._whole.get(id);
    }
    if (at !== undefined && at < seq) {
      const distance = seq - at;
      const n = varintSize(distance);
      // Only when it is shorter: a distance of millions takes 4 bytes, a one-character id 3.
      if (1 + n < end) {
        const out = new Uint8Array(1 + n + event.length - end);
        out[0] = SHORT;
        let x = distance;
        let i = 1;
        while (x > 0x7f) {
          out[i++] = (x % 128) | 0x80;
          x = Math.floor(x / 128);
        }
        out[i] = x;
        out.set(event.subarray(end), 1 + n);
        if (id !== undefined) this._last(event, end, at);
        return out;
      }
    }
    id ??= latin1(event, 2, end);
    if (at === undefined && this._whole.size >= REMEMBERED) this._whole.delete(this._whole.keys().next().value!);
    this._whole.set(id, seq);
    this._last(event, end, seq);
    return event;
  }

  /** A transaction failed: rows it stored whole may not exist. */
  forget(): void {
    this._whole.clear();
    this._lastField = undefined;
  }

  private _last(event: Uint8Array, end: number, at: number): void {
    this._lastField = event.slice(0, end);
    this._lastAt = at;
  }
}

function sameField(field: Uint8Array, event: Uint8Array, end: number): boolean {
  if (field.length !== end) return false;
  for (let i = 0; i < end; i++) if (field[i] !== event[i]) return false;
  return true;
}

function latin1(b: Uint8Array, from: number, to: number): string {
  let s = "";
  for (let i = from; i < to; i++) s += String.fromCharCode(b[i]!);
  return s;
}

function varintSize(v: number): number {
  let n = 1;
  for (let x = v; x > 0x7f; x = Math.floor(x / 128)) n++;
  return n;
}
