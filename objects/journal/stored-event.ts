/**
 * How an event's bytes are kept in `events.event`: most records of a turn name the same execution
 * and carry times a few milliseconds apart, so a row may leave out its execution id, and its time,
 * where a row before it (its lender) holds them.
 *
 * - A whole row is the Event's deterministic binary, exactly the bytes served and decoded. It never
 *   starts with 0x00 or 0x01: those are field 0, which protobuf does not have.
 * - `0x00`, a varint distance d >= 1, then the Event's bytes after its leading `execution_id`
 *   field (field 2, the first the deterministic encoding writes: field 1 is reserved). The row at
 *   seq - d is whole and starts with that same field: the event is that field, then the rest.
 * - `0x01`, d, a zigzag varint t, then the Event's bytes after its `ts` field (field 3, right after
 *   the id): the event is the lender's id field, then the lender's time plus t milliseconds as a
 *   `ts` field, then the rest.
 *
 * A 16-hex-character id takes 18 bytes and a time 13, where the marker, the distance and t take 3
 * or 4: an echo turn's four records after its first keep 23 bytes less each (docs/performance.md,
 * twenty-first round).
 *
 * The writer stores a short form only when reading it back gives the event's exact bytes (`head`
 * on the lender, compared with the event's own), so an unusual time or id never comes back
 * different. The hash is of the event, not of what is stored, so nothing about the chain changes:
 * a reader makes each row whole again (Journal._page) before anyone sees it. A short row whose
 * lender is missing, not whole, or has no id (or no time, for 0x01) stays as it is stored, which
 * no decoder accepts: a reader reports the record as broken rather than guess. Tested in
 * test/node/journal/stored-event.test.ts.
 */

import { varint } from "./record-pack.js";

/** The field tag of `Event.execution_id` (field 2, length-delimited). */
const ID_TAG = 0x12;
/** The field tag of `Event.ts` (field 3, length-delimited). */
const TS_TAG = 0x1a;
const SHORT_ID = 0x00;
const SHORT_ID_TS = 0x01;

/** The last second a Timestamp may hold (9999-12-31T23:59:59Z). */
const MAX_SECONDS = 253_402_300_799;

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

/** A time as milliseconds since the epoch and the nanoseconds below the millisecond. */
interface Ms {
  ms: number;
  sub: number;
}

/** What a whole row lends: its id field and its time (when a plain `ts` field follows the id). */
export interface Lender {
  field: Uint8Array;
  ts: Ms | undefined;
}

/** What a whole row lends, or undefined when it has no id field to lend. */
export function lenderOf(whole: Uint8Array): Lender | undefined {
  const end = idFieldEnd(whole);
  if (end === 0) return undefined;
  return { field: whole.subarray(0, end), ts: timeAt(whole, end)?.time };
}

/** A short row as stored: its marker, distance back to its lender, time offset (0x01) and where the rest starts. */
export interface ShortForm {
  lendsTime: boolean;
  distance: number;
  delta: number;
  rest: number;
}

/** A short row's form; undefined for a whole row (or bytes that are neither). */
export function shortForm(stored: Uint8Array): ShortForm | undefined {
  const marker = stored[0];
  if (marker !== SHORT_ID && marker !== SHORT_ID_TS) return undefined;
  const d = varintAt(stored, 1);
  if (d === undefined || d.value < 1) return undefined;
  if (marker === SHORT_ID) return { lendsTime: false, distance: d.value, delta: 0, rest: d.end };
  const t = varintAt(stored, d.end);
  if (t === undefined) return undefined;
  return { lendsTime: true, distance: d.value, delta: t.value % 2 === 0 ? t.value / 2 : -(t.value + 1) / 2, rest: t.end };
}

/** How many bytes a short row gets from its lender, before its own rest; -1 when the lender cannot give them. */
export function headSize(form: ShortForm, lender: Lender): number {
  if (!form.lendsTime) return lender.field.length;
  if (lender.ts === undefined) return -1;
  const ms = lender.ts.ms + form.delta;
  if (ms < 0) return -1;
  const seconds = Math.floor(ms / 1000);
  const nanos = (ms - seconds * 1000) * 1_000_000 + lender.ts.sub;
  return lender.field.length + 2 + (seconds > 0 ? 1 + varintSize(seconds) : 0) + (nanos > 0 ? 1 + varintSize(nanos) : 0);
}

/** Writes what `headSize` counts at `at` in `out` (which has the room). */
export function writeHead(out: Uint8Array, at: number, form: ShortForm, lender: Lender): void {
  out.set(lender.field, at);
  if (!form.lendsTime) return;
  const ms = lender.ts!.ms + form.delta;
  const seconds = Math.floor(ms / 1000);
  const nanos = (ms - seconds * 1000) * 1_000_000 + lender.ts!.sub;
  let i = at + lender.field.length;
  out[i++] = TS_TAG;
  out[i++] = (seconds > 0 ? 1 + varintSize(seconds) : 0) + (nanos > 0 ? 1 + varintSize(nanos) : 0);
  if (seconds > 0) {
    out[i++] = 0x08;
    i = varint(out, i, seconds);
  }
  if (nanos > 0) {
    out[i++] = 0x10;
    varint(out, i, nanos);
  }
}

/** The bytes a short row gets from its lender, before its own rest; undefined when the lender cannot give them. */
export function head(form: ShortForm, lender: Lender): Uint8Array | undefined {
  if (!form.lendsTime) return lender.field;
  const n = headSize(form, lender);
  if (n < 0) return undefined;
  const out = new Uint8Array(n);
  writeHead(out, 0, form, lender);
  return out;
}

/** A short row's whole event (`stored`'s rest after what its lender gives), in one allocation; undefined when the lender cannot give it. */
export function wholeOf(stored: Uint8Array, form: ShortForm, lender: Lender): Uint8Array | undefined {
  const n = headSize(form, lender);
  if (n < 0) return undefined;
  const out = new Uint8Array(n + stored.length - form.rest);
  writeHead(out, 0, form, lender);
  out.set(stored.subarray(form.rest), n);
  return out;
}

/** Where the writer reads a time form back before it stores one (an id of at most 127 bytes, a time of at most 16). */
const scratch = new Uint8Array(2 + 127 + 2 + 16);

/**
 * The writer's side: which rows this journal stored whole, by execution id, so the next record of
 * the same execution can point back at one. Memory only, and only rows whose transaction
 * committed: the journal calls `forget` when a transaction fails, and a new Journal (an object
 * that starts, a storage erased underneath) starts empty, so its first row of each execution is
 * stored whole again.
 */
export class ShortRows {
  private readonly _whole = new Map<string, { at: number; lender: Lender }>();
  /** The last lender looked up: most records are of the execution before them. */
  private _last: { at: number; lender: Lender } | undefined;

  /** What to store for `event` at `seq`. */
  stored(seq: number, event: Uint8Array): Uint8Array {
    const end = idFieldEnd(event);
    if (end === 0) return event;
    let found = this._last !== undefined && sameBytes(this._last.lender.field, event, end, true) ? this._last : undefined;
    let id: string | undefined;
    if (!found) {
      id = latin1(event, 2, end);
      found = this._whole.get(id);
    }
    if (found !== undefined && found.at < seq) {
      const short = shorter(event, end, seq - found.at, found.lender);
      if (short) {
        this._last = found;
        return short;
      }
    }
    id ??= latin1(event, 2, end);
    if (!this._whole.has(id) && this._whole.size >= REMEMBERED) this._whole.delete(this._whole.keys().next().value!);
    // Kept as a copy: the caller's bytes are its own.
    const time = timeAt(event, end);
    this._last = { at: seq, lender: { field: event.slice(0, end), ts: time?.time } };
    this._whole.set(id, this._last);
    return event;
  }

  /** A transaction failed: rows it stored whole may not exist. */
  forget(): void {
    this._whole.clear();
    this._last = undefined;
  }
}

/**
 * The shortest form of `event` (whose id field ends at `end`) that reads back to exactly its
 * bytes from `lender`, `distance` rows before it; undefined when none is shorter than the event.
 */
function shorter(event: Uint8Array, end: number, distance: number, lender: Lender): Uint8Array | undefined {
  const d = varintSize(distance);
  const time = lender.ts && timeAt(event, end);
  if (time && time.time.sub === lender.ts!.sub) {
    const delta = time.time.ms - lender.ts!.ms;
    const t = delta >= 0 ? 2 * delta : -2 * delta - 1;
    const size = 1 + d + varintSize(t);
    if (size < time.end) {
      const form: ShortForm = { lendsTime: true, distance, delta, rest: size };
      const readBack = headSize(form, lender) === time.end;
      if (readBack) writeHead(scratch, 0, form, lender);
      if (readBack && sameBytes(event, scratch, time.end)) {
        const out = new Uint8Array(size + event.length - time.end);
        out[0] = SHORT_ID_TS;
        varint(out, varint(out, 1, distance), t);
        out.set(event.subarray(time.end), size);
        const back = shortForm(out);
        if (back?.distance === distance && back.delta === delta && back.rest === size) return out;
      }
    }
  }
  // Only when it is shorter: a distance of millions takes 4 bytes, a one-character id 3.
  if (1 + d >= end) return undefined;
  const out = new Uint8Array(1 + d + event.length - end);
  out[0] = SHORT_ID;
  varint(out, 1, distance);
  out.set(event.subarray(end), 1 + d);
  return out;
}

/**
 * The `ts` field right after the id field (ending at `end`), when it is a plain Timestamp of a
 * time after the epoch (seconds, then nanos, each only when not zero): its time and where it ends.
 */
function timeAt(event: Uint8Array, end: number): { time: Ms; end: number } | undefined {
  if (event[end] !== TS_TAG) return undefined;
  const len = event[end + 1];
  if (len === undefined || len > 0x7f) return undefined;
  const stop = end + 2 + len;
  if (stop > event.length) return undefined;
  let at = end + 2;
  let seconds = 0;
  let nanos = 0;
  if (event[at] === 0x08 && at < stop) {
    const v = varintAt(event, at + 1);
    // Within a Timestamp's range (to the end of year 9999): its milliseconds and their offsets stay exact.
    if (v === undefined || v.end > stop || v.value > MAX_SECONDS) return undefined;
    seconds = v.value;
    at = v.end;
  }
  if (event[at] === 0x10 && at < stop) {
    const v = varintAt(event, at + 1);
    if (v === undefined || v.end > stop || v.value >= 1_000_000_000) return undefined;
    nanos = v.value;
    at = v.end;
  }
  if (at !== stop) return undefined;
  return { time: { ms: seconds * 1000 + Math.floor(nanos / 1_000_000), sub: nanos % 1_000_000 }, end: stop };
}

/** A varint of at most 7 bytes (below 2^49: seconds, distances, time offsets) at `at`. */
function varintAt(b: Uint8Array, at: number): { value: number; end: number } | undefined {
  let value = 0;
  let mul = 1;
  for (let i = at; i < b.length && i < at + 7; i++) {
    const byte = b[i]!;
    value += (byte & 0x7f) * mul;
    if ((byte & 0x80) === 0) return { value, end: i + 1 };
    mul *= 128;
  }
  return undefined;
}

/** The first `n` bytes of `a` and `b` are the same (`a` is `n` long, or `exact` is off). */
function sameBytes(a: Uint8Array, b: Uint8Array, n: number, exact = false): boolean {
  if (exact && a.length !== n) return false;
  if (a.length < n || b.length < n) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
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
