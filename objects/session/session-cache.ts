/**
 * What a session object keeps in memory of its own journal, so no operation re-reads and re-parses
 * it (issue 12): the decoded records, and their parse into executions (controller/execution-log.ts
 * `ExecutionLog`). Loaded from SQLite the first time an operation needs it in this object's life,
 * then extended by every record the session appends. The object is the journal's only writer
 * (one Durable Object per session), so the cache cannot fall behind it; a fork child's copied
 * prefix and an erase reset it. Loading it and extending it give the same records and the same
 * parse (test/node/session/session-cache.test.ts checks that on long randomized journals).
 *
 * A journal whose decoded records would take more than `maxHeapBytes` of memory (`heapEstimate`)
 * is not kept: reads of records go to SQLite again, each for the records it asks for, so memory
 * stays bounded whatever the session's size. What the session's operations decide from the parse
 * (the latest execution, its gate, a retried decision) is still kept, in a latest-only
 * ExecutionLog that every append extends: it costs memory per execution, not per record, and
 * spares those operations a read of the whole journal (`current`). It is kept in SQLite between
 * object lives (parse-checkpoint.ts), so an object that starts again reads it back with the
 * records since, not the whole journal.
 * @internal
 */
import { decodeBinary } from "../../proto/binary-reader.js";
import { type Event, EventKind, EventSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecutionLog, type LoggedEvent, type ParsedLog } from "../controller/execution-log.js";
import { type ParseCheckpoints, type StoredCheckpoint, UnreadableCheckpointError } from "./parse-checkpoint.js";
import type { AppendedRecord, Journal } from "../journal/journal.js";
import { compactedThrough, historyAt, isSummary, markerAt } from "../../runtimes/compaction.js";

/**
 * Memory the decoded journal may take at most, as `heapEstimate` counts it. A Worker isolate has
 * 128 MB, shared by every object of the class that the platform places in it.
 */
export const DEFAULT_CACHE_MAX_HEAP_BYTES = 32 * 1024 * 1024;

/**
 * What a decoded record costs in memory beyond its own bytes: the Event, its body and nested
 * messages (protobuf-es objects of some 60-100 bytes each), the seq and the cache's entries.
 * Measured at 450-750 bytes a record (`npm run bench:memory`, docs/performance.md "Memory").
 */
const RECORD_HEAP_BYTES = 768;
/** Strings and bytes decode to about their stored size; twice it leaves room for the small fields. */
const PLAIN_BYTE_FACTOR = 2;
/** A google.protobuf.Struct decodes to a JSON object of some 70 bytes a field: 3.5-5.4x its stored bytes. */
const JSON_BYTE_FACTOR = 6;

/**
 * The memory a record of `storedBytes` takes once decoded and cached: an estimate from above, so
 * the budget holds for journals of small records (where the per-record objects dominate) and of
 * tool arguments and results (where JSON does), not only for journals of long text.
 */
export function heapEstimate(storedBytes: number, event: Event): number {
  return RECORD_HEAP_BYTES + storedBytes * (carriesJson(event) ? JSON_BYTE_FACTOR : PLAIN_BYTE_FACTOR);
}

/** Whether an event carries a google.protobuf.Struct: tool arguments and outputs, data parts. */
function carriesJson(event: Event): boolean {
  const body = event.body;
  if (body.case === "tool" || body.case === "result") return true;
  if (body.case !== "message") return false;
  for (const part of body.value.parts) {
    const c = part.part.case;
    if (c === "data" || c === "toolCall" || c === "toolResult") return true;
  }
  return false;
}

const PAGE = 512;

/**
 * Records past the stored checkpoint that make the object store a newer one, whether they were
 * appended in this life or read past a restored one: what an object that starts again reads at most
 * beyond the latest execution to know it.
 */
const CHECKPOINT_EVERY = 256n;

interface Loaded {
  events: LoggedEvent[];
  /** The same records' events alone (what a harness's Start.history is made of). */
  list: Event[];
  log: ExecutionLog;
  /** Indices into `list` of its compaction markers (compaction.ts markerAt), ascending. */
  markers: number[];
  /** heapEstimate summed over the records. */
  heap: number;
  /** Seqs run 1, 2, 3, ... with no gap (a tampered file may have one: then nothing is cached). */
  contiguous: boolean;
  /** The last history handed out from the first event (list[0 .. its length)), grown in place by the next. */
  handed?: Event[];
}

/** The parse kept of a journal not kept in memory, and the seq of the last record it was fed. */
interface Light {
  log: ExecutionLog;
  head: bigint;
}

export class SessionCache {
  private _loaded: Loaded | undefined;
  /** Set once the journal outgrew the budget (or has a gap) in this object's life: reads go to SQLite. */
  private _tooLarge = false;
  /** Then, once an operation needed the parse: the latest-only parse, kept up to date. */
  private _light: Light | undefined;
  /** Until then, once a turn asked latestOpen: the latest execution and whether it ended, kept up to date. */
  private _tail: Tail | undefined;
  /** The seq the stored checkpoint was taken after, once this life read or wrote it (0: none stored). */
  private _storedThrough: bigint | undefined;
  /** Set when this life found no usable checkpoint to restore: not looked for again. */
  private _noCheckpoint = false;
  /** The journal's head when this life first appended with no parse kept (`_follow`). */
  private _lifeStart: bigint | undefined;
  /**
   * Set when a checkpoint's write failed: the parse had handed it what changed and cannot hand it
   * again, so this life writes no more (the stored rows stay as the last write left them).
   */
  private _writesOff = false;

  constructor(
    private readonly _journal: () => Journal,
    private readonly _maxHeapBytes = DEFAULT_CACHE_MAX_HEAP_BYTES,
    /** Told once per object life, with the records counted so far, when the journal outgrows the budget. */
    private readonly _onOverBudget?: (records: number, heapEstimate: number) => void,
    /**
     * Where the parse's checkpoint is kept between object lives (parse-checkpoint.ts), how many
     * records past the stored one make a newer one (CHECKPOINT_EVERY), and who is told (once per
     * object life) that a write failed; none: built from the journal.
     */
    private readonly _checkpoints?: { store: ParseCheckpoints; after?: bigint; onWriteFailed?: (error: unknown) => void },
  ) {}

  /** Every record of the journal, decoded, in seq order. Callers must not change the array. */
  events(): LoggedEvent[] {
    return this._load()?.events ?? readAll(this._journal()).events;
  }

  /** Records with from <= seq <= to (to = 0: the head). */
  range(from: bigint, to: bigint): LoggedEvent[] {
    const loaded = this._load();
    if (!loaded) return readRange(this._journal(), from, to);
    const head = BigInt(loaded.events.length);
    const hi = to <= 0n ? head : to < head ? to : head;
    const lo = from < 1n ? 1n : from;
    if (hi < lo) return [];
    // Seqs are contiguous from 1, so a record's index is its seq - 1.
    return loaded.events.slice(Number(lo) - 1, Number(hi));
  }

  /** The events alone of records with from <= seq <= to (to = 0: the head), as a new array. */
  eventRange(from: bigint, to: bigint): Event[] {
    const loaded = this._load();
    if (!loaded) return readRange(this._journal(), from, to).map((e) => e.event);
    const head = BigInt(loaded.list.length);
    const hi = to <= 0n ? head : to < head ? to : head;
    const lo = from < 1n ? 1n : from;
    if (hi < lo) return [];
    return loaded.list.slice(Number(lo) - 1, Number(hi));
  }

  /**
   * The history of an execution starting after seq `to` (TurnLog.history): bounded at its latest
   * compaction point. Uncached, it reads back from `to` only as far as that point, so a journal
   * too large to keep costs each turn the records since its latest compaction, not all of them.
   */
  history(to: bigint): Event[] {
    const loaded = this._load();
    if (loaded) {
      const end = to < BigInt(loaded.list.length) ? Number(to) : loaded.list.length;
      // The latest marker before `end`, without scanning the journal for it (what boundHistory does).
      const { markers, list } = loaded;
      let k = markers.length - 1;
      while (k >= 0 && markers[k]! >= end) k--;
      return k < 0 ? prefixOf(loaded, end) : historyAt(list, end, markers[k]!, markerAt(list, markers[k]!)!);
    }
    const journal = this._journal();
    let tail: LoggedEvent[] = [];
    for (const page of pagesBack(journal, to)) {
      tail = page.concat(tail);
      // The page just read is tail[0 .. page.length - 1]; tail[page.length] was the previous page's
      // first record, skipped then for want of the record before it.
      for (let at = Math.min(page.length, tail.length - 1); at >= 1; at--) {
        const n = compactedThrough(tail[at]!.event);
        if (n === undefined || !isSummary(tail[at - 1]!.event, tail[at]!.event)) continue;
        if (n >= tail[at - 1]!.seq) continue;
        // Read back to N + 1 if the tail does not reach it yet (which moves the marker's index),
        // then bound it as boundHistory does.
        const marker = tail[at]!;
        const summary = tail[at - 1]!;
        if (tail[0]!.seq > n + 1n) tail = readRange(journal, n + 1n, tail[0]!.seq - 1n).concat(tail);
        return [summary.event, marker.event, ...tail.filter((e) => e.seq > n && e !== summary && e !== marker).map((e) => e.event)];
      }
    }
    return tail.map((e) => e.event);
  }

  /** The latest record whose event matches, searched back from the head: a journal not kept is read a page at a time. */
  findLast(match: (event: Event) => boolean): LoggedEvent | undefined {
    const loaded = this._load();
    for (const page of loaded ? [loaded.events] : pagesBack(this._journal(), this._journal().head().seq)) {
      for (let i = page.length - 1; i >= 0; i--) if (match(page[i]!.event)) return page[i];
    }
    return undefined;
  }

  /** Records with from <= seq <= to (to = 0: the head) in pages, so a journal not kept is never held decoded whole. */
  *pages(from: bigint, to: bigint): Generator<LoggedEvent[]> {
    const loaded = this._load();
    if (!loaded) {
      yield* pagesFrom(this._journal(), from, to);
      return;
    }
    const events = this.range(from, to);
    for (let i = 0; i < events.length; i += PAGE) yield events.slice(i, i + PAGE);
  }

  /**
   * The journal's whole parse into executions (what parseExecutions gives for events()): for an
   * operation over every execution (a replay audit). Not kept in memory, it reads the journal.
   */
  parsed(): ParsedLog {
    const loaded = this._load();
    if (loaded) return loaded.log.view(loaded.events);
    const all = readAll(this._journal());
    return all.log.view(all.events);
  }

  /**
   * The parse as operations on the latest execution need it: parsed() while the journal is kept in
   * memory; past the budget, the latest-only parse (ParsedLog.latestOnly), whose histories read back
   * only to their latest compaction point (`history`). Same verdict, latest execution and fork seq
   * either way (test/node/session/session-cache.test.ts).
   */
  current(): ParsedLog {
    const log = this._log();
    const loaded = this._loaded;
    if (loaded && log === loaded.log) return log.view(loaded.events);
    return log.latestView((ex) => this.history(ex.firstSeq - 1n));
  }

  /**
   * Whether the latest execution never ended (a malformed journal: false, as parseExecutions says).
   * Past the budget, before any operation needed the parse, it reads back from the head to the
   * latest EXECUTION_START only: a turn does not pay for building the parse.
   */
  latestOpen(): boolean {
    // A turn needs the records for its history anyway: within the budget they are loaded.
    const log = this._loaded?.log ?? this._light?.log ?? this._load()?.log ?? this._lightLog(true);
    if (log) return log.latestOpen();
    this._tail ??= latestFromEnd(this._journal());
    return this._tail.open;
  }

  /** The decision recorded for a gate, in any execution (ExecutionLog.decision). */
  decision(executionId: string, toolCallId: string, requestSeq: bigint): LoggedEvent | undefined {
    return this._log().decision(executionId, toolCallId, requestSeq);
  }

  /**
   * The parse operations on the latest execution decide from: the one kept in memory, else the
   * latest-only one restored from its stored checkpoint (Approve, Cancel and Resume after an object
   * starts read the latest execution and the records since, whatever the journal's length), else
   * the journal loaded, else the latest-only parse built from the whole journal.
   */
  private _log(): ExecutionLog {
    return this._loaded?.log ?? this._light?.log ?? this._lightLog(true) ?? this._load()?.log ?? this._lightLog();
  }

  /** Records the session just appended (in seq order, right after the cached head). */
  appended(records: readonly AppendedRecord[]): void {
    const tail = this._tail;
    if (tail) {
      for (const r of records) {
        const ev = r.decoded;
        if (ev.kind === EventKind.EVENT_EXECUTION_START) {
          tail.id = ev.executionId;
          tail.open = true;
        } else if (ev.kind === EventKind.EVENT_END && ev.executionId === tail.id) tail.open = false;
      }
    }
    const light = this._light;
    if (light) {
      for (const r of records) {
        if (r.seq !== light.head + 1n) {
          // Something wrote around this parse: build it again from the journal when next asked.
          this._light = undefined;
          break;
        }
        light.log.push(r.seq, r.decoded);
        light.head = r.seq;
      }
    }
    const loaded = this._loaded;
    if (loaded) {
      for (const r of records) {
        if (r.seq !== BigInt(loaded.events.length + 1)) {
          // Not the next record: something wrote around this cache; read the journal again.
          this._loaded = undefined;
          return;
        }
        loaded.events.push({ seq: r.seq, event: r.decoded });
        loaded.list.push(r.decoded);
        noteMarker(loaded.list, loaded.markers);
        loaded.log.push(r.seq, r.decoded);
        loaded.heap += heapEstimate(r.event.length, r.decoded);
      }
      if (loaded.heap > this._maxHeapBytes) return this._drop(loaded.events.length, loaded.heap);
    }
    const first = records[0];
    const last = records[records.length - 1];
    if (!first || !last) return;
    try {
      if (this._loaded || this._light) this._checkpointIfDue(last.seq);
      else this._follow(first.seq, last.seq);
    } catch {
      // The records are committed whatever happens here: a parse not made now is made when needed.
    }
  }

  /**
   * With no parse kept yet in this object's life (a turn that needs none, as an echo turn): once
   * CHECKPOINT_EVERY records came after the stored checkpoint, the parse is made (from that
   * checkpoint, or from the journal's start when this life began under CHECKPOINT_EVERY records),
   * a newer checkpoint stored, and the parse kept from then on. So the next object life's Approve,
   * Cancel or Resume reads at most about CHECKPOINT_EVERY records past the stored one, and a turn
   * that appends less pays only for reading where it is. A long journal without one (stored by an
   * older build) waits for the operation that builds it.
   */
  private _follow(first: bigint, head: bigint): void {
    if (!this._checkpoints || this._noCheckpoint) return;
    this._lifeStart ??= first - 1n;
    this._storedThrough ??= this._storedCheckpoint();
    if (head - this._storedThrough < this._every()) return;
    if (this._storedThrough > 0n) this._lightLog(true);
    else if (this._lifeStart < this._every()) this._lightLog();
    else this._noCheckpoint = true;
  }

  private _every(): bigint {
    return this._checkpoints?.after ?? CHECKPOINT_EVERY;
  }

  /** Forgets everything: the journal was replaced underneath (a fork child's seed, an erase). */
  reset(): void {
    this._loaded = undefined;
    this._tooLarge = false;
    this._light = undefined;
    this._tail = undefined;
    this._storedThrough = undefined;
    this._noCheckpoint = false;
    this._lifeStart = undefined;
    this._writesOff = false;
  }

  private _load(): Loaded | undefined {
    if (this._loaded || this._tooLarge) return this._loaded;
    // Every record takes at least RECORD_HEAP_BYTES decoded: a journal of more records than the
    // budget has room for is too large without reading a budget's worth of it to find out.
    const head = Number(this._journal().head().seq);
    if (head * RECORD_HEAP_BYTES > this._maxHeapBytes) {
      this._tooLarge = true;
      this._onOverBudget?.(head, head * RECORD_HEAP_BYTES);
      return undefined;
    }
    // The parse learns which of its executions the stored checkpoint already holds, so the next
    // one writes only what changed since.
    const stored = this._storedCheckpoint();
    const all = readAll(this._journal(), this._maxHeapBytes, stored);
    if (all.heap > this._maxHeapBytes || !all.contiguous) {
      this._tooLarge = true;
      if (all.heap > this._maxHeapBytes) this._onOverBudget?.(all.events.length, all.heap);
      return undefined;
    }
    this._loaded = all;
    this._storedThrough = stored;
    this._checkpointIfDue(BigInt(all.events.length));
    return all;
  }

  /** The seq a usable stored checkpoint was taken after (`_usableCheckpoint`), 0 without one. */
  private _storedCheckpoint(): bigint {
    return this._usableCheckpoint()?.through ?? 0n;
  }

  /**
   * The stored checkpoint, if its record still carries its hash: the hash chain makes that a check
   * of every record up to it. Rows that do not fit the journal, or that this build cannot read, are
   * dropped (undefined); storage faults are thrown.
   */
  private _usableCheckpoint(): StoredCheckpoint | undefined {
    const store = this._checkpoints?.store;
    if (!store) return undefined;
    let cp: StoredCheckpoint | undefined;
    try {
      cp = store.read();
      if (!cp) return undefined;
    } catch (e) {
      if (!(e instanceof UnreadableCheckpointError)) throw e;
    }
    const at = cp && cp.through > 0n ? this._journal().read(cp.through, cp.through, 1)[0] : undefined;
    if (cp && at?.seq === cp.through && at.hash === cp.hash) return cp;
    store.clear();
    return undefined;
  }

  /** Stores a checkpoint of the parse kept when CHECKPOINT_EVERY records came after the stored one. */
  private _checkpointIfDue(head: bigint): void {
    if (!this._checkpoints) return;
    const log = this._light?.log ?? this._loaded?.log;
    if (!log) return;
    this._storedThrough ??= this._storedCheckpoint();
    if (head - this._storedThrough >= this._every()) this._storeCheckpoint(log, head);
  }

  /**
   * The latest-only parse, made once in this object's life: from the stored checkpoint and the
   * records after it, or else (not `restoredOnly`: then undefined) from the whole journal. A
   * checkpoint is stored when that took CHECKPOINT_EVERY records or more past the stored one (or
   * the journal's start), so the next object life reads little.
   */
  private _lightLog(restoredOnly: true): ExecutionLog | undefined;
  private _lightLog(): ExecutionLog;
  private _lightLog(restoredOnly = false): ExecutionLog | undefined {
    if (this._light) return this._light.log;
    if (restoredOnly && this._noCheckpoint) return undefined;
    const journal = this._journal();
    const restored = this._restore(journal);
    this._noCheckpoint = !restored;
    if (!restored && restoredOnly) return undefined;
    const light: Light = restored ? { log: restored.log, head: restored.through } : { log: new ExecutionLog(true), head: 0n };
    let read = restored?.read ?? 0;
    for (const page of pagesFrom(journal, light.head + 1n, 0n)) {
      read += page.length;
      for (const e of page) {
        light.log.push(e.seq, e.event);
        light.head = e.seq;
      }
    }
    this._light = light;
    this._storedThrough = restored?.through ?? 0n;
    // Also when the checkpoint's latest execution was long: the next life reads the latest one now.
    if (light.head > this._storedThrough && BigInt(read) >= this._every()) this._storeCheckpoint(light.log, light.head);
    return light.log;
  }

  /** Stores `log`'s checkpoint, taken after the record at `through`, the journal's head. */
  private _storeCheckpoint(log: ExecutionLog, through: bigint): void {
    const store = this._checkpoints?.store;
    const head = this._journal().head();
    if (!store || this._writesOff || through === 0n || head.seq !== through) return;
    try {
      store.write(log.checkpoint(), head.hash);
      this._storedThrough = through;
    } catch (e) {
      // The parse stands without its checkpoint; the stored one stays whole at its own seq.
      this._writesOff = true;
      this._checkpoints?.onWriteFailed?.(e);
    }
  }

  /**
   * The latest-only parse as its stored checkpoint left it, the seq it was taken after, and how
   * many records it read (the latest execution's); undefined without a usable one.
   */
  private _restore(journal: Journal): { log: ExecutionLog; through: bigint; read: number } | undefined {
    const cp = this._usableCheckpoint();
    if (!cp) return undefined;
    const store = this._checkpoints!.store;
    const records = readRange(journal, cp.latest?.firstSeq ?? cp.through, cp.through);
    try {
      const log = ExecutionLog.restore({
        ...cp,
        records,
        earlier: (id) => store.earlier(id, (seq) => readRange(journal, seq, seq)[0]?.event.executionId),
        // Records at or before `through`, which the hash check vouched for.
        decisions: (id) => store.decisions(id).flatMap((seq) => readRange(journal, seq, seq)),
      });
      return { log, through: cp.through, read: records.length };
    } catch {
      // Rows that do not fit the journal: dropped, and the parse built from the journal.
      store.clear();
      return undefined;
    }
  }

  private _drop(records: number, heap: number): void {
    const loaded = this._loaded!;
    const head = BigInt(records);
    this._loaded = undefined;
    this._tooLarge = true;
    // Kept for the object lives to come, which will not fit the journal in memory either.
    if (this._light) this._storeCheckpoint(this._light.log, head);
    else {
      this._storeCheckpoint(loaded.log, head);
      // The records are all in memory: the latest-only parse is made from them, not read again.
      const log = new ExecutionLog(true);
      for (const e of loaded.events) log.push(e.seq, e.event);
      // What the store holds already is not written again by its next checkpoint.
      if (this._storedThrough === head) log.checkpoint();
      this._light = { log, head };
    }
    this._onOverBudget?.(records, heap);
  }
}

/**
 * list[0 .. end): the last one handed out grown in place when it is a prefix of this one (a turn's
 * history is the last turn's plus that turn's records), so a turn does not copy the whole journal.
 * The previous turn's harness is done with its history by then; an earlier point gets a copy.
 */
function prefixOf(loaded: Loaded, end: number): Event[] {
  const { list, handed } = loaded;
  if (handed && handed.length <= end) {
    for (let i = handed.length; i < end; i++) handed.push(list[i]!);
    return handed;
  }
  return (loaded.handed = list.slice(0, end));
}

/** Notes the list's last event if it is a compaction marker. */
function noteMarker(list: readonly Event[], markers: number[]): void {
  if (markerAt(list, list.length - 1) !== undefined) markers.push(list.length - 1);
}

/**
 * Reads and parses the whole journal; stops early (its heapEstimate over the limit) once
 * `stopAbove` is passed. `storedThrough`: the seq of the stored checkpoint, which the parse is told
 * holds every record up to it (ExecutionLog.checkpoint), so its next checkpoint is what came since.
 */
function readAll(journal: Journal, stopAbove = Number.POSITIVE_INFINITY, storedThrough = 0n): Loaded {
  const events: LoggedEvent[] = [];
  const list: Event[] = [];
  // It takes the session's checkpoints while the journal is kept.
  const log = new ExecutionLog(false, true);
  const markers: number[] = [];
  let heap = 0;
  let contiguous = true;
  for (let at = 1n; ; ) {
    const page = journal.read(at, 0n, PAGE);
    for (const r of page) {
      const event = decodeBinary(EventSchema, r.event);
      if (r.seq !== BigInt(events.length + 1)) contiguous = false;
      events.push({ seq: r.seq, event });
      list.push(event);
      noteMarker(list, markers);
      log.push(r.seq, event);
      if (r.seq === storedThrough) log.checkpoint();
      heap += heapEstimate(r.event.length, event);
    }
    if (heap > stopAbove || page.length < PAGE) return { events, list, log, markers, heap, contiguous };
    at = page[page.length - 1]!.seq + 1n;
  }
}

/** Records from <= seq <= to (to = 0: the head), decoded, a page at a time. */
function* pagesFrom(journal: Journal, from: bigint, to: bigint): Generator<LoggedEvent[]> {
  if (to < 0n || (to > 0n && to < from)) return;
  for (let at = from; ; ) {
    const page = journal.read(at, to, PAGE);
    yield page.map((r) => ({ seq: r.seq, event: decodeBinary(EventSchema, r.event) }));
    if (page.length < PAGE) return;
    at = page[page.length - 1]!.seq + 1n;
  }
}

/** Records of the first page pagesBack reads: what a search that ends near the head needs. */
const FIRST_PAGE_BACK = 16n;

/**
 * Records 1..hi, decoded, a page at a time from `hi` back (each page in seq order). Pages grow from
 * FIRST_PAGE_BACK records to PAGE, four times larger each: most searches back end within a turn's
 * few records, and a first page of 512 decoded was most of a turn's first read in an object life.
 */
function* pagesBack(journal: Journal, hi: bigint): Generator<LoggedEvent[]> {
  let size = FIRST_PAGE_BACK;
  for (let top = hi; top >= 1n; ) {
    const lo = top - size + 1n > 1n ? top - size + 1n : 1n;
    yield readRange(journal, lo, top);
    top = lo - 1n;
    if (size < BigInt(PAGE)) size = size * 4n < BigInt(PAGE) ? size * 4n : BigInt(PAGE);
  }
}

/**
 * latestOpen for a journal too large to keep, before its parse is needed: reads back from the head to the latest
 * EXECUTION_START only, and says whether an END of that execution follows it. (A malformed journal,
 * which the full parse calls not open, is judged by the operation that then parses it.)
 */
function latestFromEnd(journal: Journal): Tail {
  const ended = new Set<string>();
  for (const page of pagesBack(journal, journal.head().seq)) {
    for (let i = page.length - 1; i >= 0; i--) {
      const ev = page[i]!.event;
      if (ev.kind === EventKind.EVENT_END) ended.add(ev.executionId);
      else if (ev.kind === EventKind.EVENT_EXECUTION_START) return { id: ev.executionId, open: !ended.has(ev.executionId) };
    }
  }
  return { id: "", open: false };
}

/** The latest EXECUTION_START's execution, and whether no END of it followed. */
interface Tail {
  id: string;
  open: boolean;
}

function readRange(journal: Journal, from: bigint, to: bigint): LoggedEvent[] {
  return [...pagesFrom(journal, from, to)].flat();
}
