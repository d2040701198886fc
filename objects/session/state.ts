/**
 * What every session operation shares: the metadata row, the journal (appends go through the
 * projections here), the live guard and its execution lease, the session's view of harnesses,
 * models and runtime, the alarm and the Directory report. Where the harness runs (admission,
 * placement, the live re-check) is placement.ts, reached as `placement`. Internal to
 * objects/session: the operations live in turns.ts, session/lifecycle.ts, fork.ts and audit.ts, and
 * SessionHost is their facade.
 * @internal
 */
import { create } from "@bufbuild/protobuf";
import { type Event, EventKind, EventSchema, type Message } from "../../proto/gen/agentsessions/v1/common_pb.js";
import type { HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import type { Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { createDirectoryRow } from "../directory/directory-row.js";

import { builtinHarnesses, type HarnessResolver } from "../../runtimes/builtin/index.js";
import { createBuiltinRuntime } from "../../runtimes/builtin/runtime.js";
import type { Harness } from "../../runtimes/harness-spi.js";
import type { Incarnation, Runtime } from "../../runtimes/runtime-spi.js";
import { StreamInbox } from "../../runtimes/tunnel/inbox.js";
import { HarnessDescribeError } from "../controller/errors.js";
import { randomHex } from "../../proto/ids.js";
import { historyOf, type LoggedEvent, type ParsedLog } from "../controller/execution-log.js";
import type { DescribeHarness } from "../controller/identity.js";
import type { ModelInvoker } from "../controller/models.js";
import type { LiveSinkOptions } from "../controller/live-sink.js";
import type { ToolExecutor } from "../controller/tools.js";
import type { DirectoryRow } from "../directory/directory-store.js";
import { BlobMismatchError, blobRefsOf, resolveEvent, type BlobReference, type Sha256Hex } from "../../proto/blob-ref.js";
import { readBlob, sha256Hex, type BlobStore } from "../blobs/blob-store.js";
import { createBlobWriter } from "../blobs/blob-writer.js";
import { SessionBlobs } from "../blobs/session-blobs.js";
import type { EventExternalizer, TurnLog } from "../controller/turn-writer.js";
import { Journal, type AppendedRecord, type AppendResult, type PreparedEvent } from "../journal/journal.js";
import type { SqlDb } from "../storage/sql.js";
import { MetaStore, type SessionMeta } from "./meta-store.js";
import { failure, success, type Outcome } from "./outcomes.js";
import { projectRecords, sameStates, type States } from "./projection.js";
import { isSessionInitialized, migrateSession } from "./schema.js";
import { DEFAULT_CACHE_MAX_HEAP_BYTES, SessionCache } from "./session-cache.js";
import { ParseCheckpoints } from "./parse-checkpoint.js";
import { type FollowLimits, Followers, TailEndReason } from "./followers.js";
import { keepsRows } from "../limits/tenant-limits.js";
import { InputHashCache } from "../controller/input-hash.js";
import { renderSession } from "./render.js";
import { LazyTimer } from "../lazy-timer.js";
import { writeLogLine } from "../log-line.js";
import { DirectoryReports } from "./directory-reports.js";
import { DESCRIBE_TIMEOUT_MS, describeWithin, Placement } from "./placement.js";

export { DESCRIBE_TIMEOUT_MS, type PlacementLine } from "./placement.js";

export interface SessionHostDeps {
  db: SqlDb;
  now: () => number;
  /** The model invoker for a session whose `model` field is `sessionModel`. */
  models: (sessionModel: string) => ModelInvoker;
  /** Reports the session's latest state to its tenant's Directory (when: directory-reports.ts). */
  directory: (tenant: string, row: DirectoryRow) => Promise<void>;
  /**
   * How close together two changes must come to make a burst, whose turns report to the
   * Directory only now and then (DIRECTORY_BURST_MS by default; 0: every change reports).
   */
  directoryBurstMs?: number;
  /**
   * How long a turn runs before the Directory is told it is running (RUNNING_REPORT_MS by
   * default): a turn that ends sooner costs the Directory one report, at its end.
   */
  runningReportMs?: number;
  /** Erases every byte of this session's storage (DeleteSession). */
  erase: () => Promise<void>;
  /** The harnesses built into this host; the built-in echo harness by default. */
  harnesses?: HarnessResolver;
  /**
   * Harnesses that are not built in: those connected over the tunnel (or registered). Undefined
   * when the name is unknown here. The inbox is where this session's tunnel events arrive.
   */
  remote?: (name: string, session: { tenant: string; uid: string }, inbox: StreamInbox) => Promise<ServedHarness | undefined>;
  /** Where harnesses are placed; the built-in (in-isolate) runtime by default. */
  runtime?: Runtime;
  /** The executor of host-executed tool calls; without one they fail closed after the intent. */
  tools?: ToolExecutor;
  /** The deployment's default approval deadline (seconds; unset = none). */
  approvalTimeoutSeconds?: number;
  /** Owns the object's single alarm slot: when the pending approval's deadline falls (null clears). */
  setAlarm?: (atMs: number | null) => Promise<void>;
  maxEventBytes?: number;
  /** Stamps `Event.ts` on every event written (journal.ts); unset, events carry no time. */
  clock?: () => number;
  /**
   * Where parts over the inline limit go (docs/blobs.md); without it every part stays inline,
   * bounded by maxEventBytes.
   */
  blobs?: SessionBlobDeps;
  /** Heartbeat, idle limit and queue bound of Tail followers (followers.ts); defaults without. */
  follow?: FollowLimits;
  /** Memory the decoded journal kept in memory may take at most (session-cache.ts heapEstimate). */
  cacheMaxHeapBytes?: number;
  /** Where structured log lines go (one JSON object each); the console by default (objects/log-line.ts). */
  log?: (line: Record<string, unknown>) => void;
  /**
   * The tenant's count of running executions (objects/limits): a turn takes a slot before it runs
   * and gives it back when it ends; unset, nothing is counted (in-process tests).
   */
  leases?: ExecutionLeases;
}

export interface SessionBlobDeps {
  store: BlobStore;
  maxInline: number;
  /** Counts sessions `uids` of `tenant` as owners of the digests, in the tenant's Directory. */
  own: (tenant: string, uids: string[], shas: Sha256Hex[]) => Promise<void>;
}

/** Slots in the tenant's count of running executions, held by this object's turns. */
export interface ExecutionLeases {
  /** Takes a slot; a success says how many the tenant now runs, this one included. */
  acquire(tenant: string, uid: string, owner: string): Promise<{ ok: true; running?: number } | { ok: false; running: number }>;
  release(tenant: string, uid: string, owner: string): Promise<void>;
  /**
   * Tells the limiter the slot is kept after its turn, for the session's next turn to take without
   * asking (unset: every slot goes back as its turn ends). Kept only while the tenant runs at most
   * half its limit, and given up the moment the limiter asks about it: see SessionState.release.
   */
  keep?(tenant: string, uid: string, owner: string): Promise<void>;
  /** The tenant's limit (MAX_CONCURRENT_EXECS). */
  limit?: number;
}

/** A harness this session can place, and what its registration (if any) requires of it. */
export interface ServedHarness {
  harness: Harness;
  /**
   * A compute backend that places this harness (a registered http_runtime): the host asks it for
   * the descriptor and capabilities, and creates, pauses, stops and restores the incarnation whose
   * process dials back over the tunnel with a one-time token.
   */
  runtime?: PlacingRuntime;
  /** A registered harness: sessions on it are pinned (no per-turn override onto or off it). */
  registered?: boolean;
  /** The registration's descriptor_id: Describe must answer this id (else FAILED_PRECONDITION). */
  expectId?: string;
}

/** A runtime backend the host places a harness on (runtimes/http). */
export interface PlacingRuntime extends Runtime {
  describe(harness: string, signal?: AbortSignal): Promise<HarnessDescriptor>;
  /**
   * The tunnel URL and one-time token an incarnation of `harness` dials back with: for this
   * session, or for `sessionUid` (a memory fork's child, whose clone dials back as itself).
   */
  dialback(harness: string, sessionUid?: string): Promise<{ tunnelUrl: string; token: string }>;
}

/** The turn (or recovery) running right now; the overlap guard. */
export interface LiveTurn {
  abort: AbortController;
  /** The execution it runs, once known (Cancel names it). */
  executionId: string;
  /** Settles when the operation has released the guard. */
  done: Promise<void>;
  finish: () => void;
  /** The owner of the tenant's running-execution slot this operation holds, if it took one. */
  lease?: string;
  /** Whether that slot may be kept for the session's next turn when this one ends. */
  keepSlot?: boolean;
}

export class SessionState {
  readonly meta: MetaStore;
  journal: Journal;
  /** The decoded journal and its parse, kept in memory (session-cache.ts). */
  readonly cache: SessionCache;
  /** The blobs this journal references (objects/blobs/session-blobs.ts). */
  readonly blobIndex: SessionBlobs;
  /** ModelCall input hashes, continued from the session's previous call (controller/input-hash.ts). */
  readonly inputHashes = new InputHashCache();
  readonly harnesses: HarnessResolver;
  readonly runtime: Runtime;
  /** Events from tunnel harnesses, waiting for the stream of a running execution. */
  readonly inbox = new StreamInbox();
  /** Every Tail of this session: fed by `commit` after each transaction, and by the turn's deltas. */
  readonly followers: Followers;
  live: LiveTurn | undefined;
  /**
   * Names this instance of the object in the leases its turns take: a restarted object has a new
   * one, so the limiter can tell a lease of a turn that died with the old instance (objects/limits).
   */
  private readonly _instance = randomHex(8);
  private _initialized = false;
  private _turns = 0;
  /**
   * A slot kept after its turn (ExecutionLeases.keep) until the next turn takes it, the limiter
   * asks about it (runs()), or the session is deleted. No timer gives it back: a pending timer
   * keeps a Durable Object in memory, and billed.
   */
  private _idleLease: { owner: string; tenant: string; uid: string } | undefined;
  /** The slot the limiter was last told is kept (a slot kept again after its next turn is not told twice). */
  private _toldKept: string | undefined;
  /**
   * Reports a turn that has run a while to the Directory (turns.ts RUNNING_REPORT_MS): set as a
   * turn starts, cleared as it ends.
   */
  readonly runningReport = new LazyTimer(() => void this.reports.refresh());

  /** When this session reports to its tenant's Directory (directory-reports.ts). */
  readonly reports: DirectoryReports;

  /** Admission, the live re-check and placement on a runtime backend (placement.ts). */
  readonly placement: Placement;

  constructor(readonly d: SessionHostDeps) {
    this.placement = new Placement(this);
    this.harnesses = d.harnesses ?? builtinHarnesses();
    this.runtime = d.runtime ?? createBuiltinRuntime();
    // A session stored by an older build is brought to this build's schema when its object wakes.
    if (isSessionInitialized(d.db)) migrateSession(d.db);
    this.meta = new MetaStore(d.db);
    this.journal = new Journal(d.db, d.maxEventBytes, d.clock);
    // A budget of 0 keeps nothing by the operator's choice: no session has outgrown anything.
    this.cache = new SessionCache(
      () => this.journal,
      d.cacheMaxHeapBytes,
      d.cacheMaxHeapBytes === 0
        ? undefined
        : (records, heap) =>
            (d.log ?? writeLogLine)({
              level: "warn",
              msg: "journal cache over budget",
              component: "session",
              session: this.meta.load()?.uid ?? "",
              records,
              estimated_bytes: heap,
              budget_bytes: d.cacheMaxHeapBytes ?? DEFAULT_CACHE_MAX_HEAP_BYTES,
            }),
      {
        store: new ParseCheckpoints(d.db),
        // The parse goes on; the next object life reads more of the journal to rebuild it.
        onWriteFailed: (e) =>
          (d.log ?? writeLogLine)({
            level: "warn",
            msg: "parse checkpoint not stored",
            component: "session",
            session: this.meta.load()?.uid ?? "",
            through: Number(this.journal.head().seq),
            // A storage error names tables and columns, never values.
            error: e instanceof Error ? e.message.slice(0, 200) : "error",
          }),
      },
    );
    this.blobIndex = new SessionBlobs(d.db);
    // One line per follower that leaves (docs/follow.md): who followed is the rpc line's; this says
    // how it ended, which the rpc line of a binary Tail, written as the answer starts, cannot.
    this.followers = new Followers(
      () => this.journal,
      d.follow,
      undefined,
      (leave) =>
        (d.log ?? writeLogLine)({
          level: "info",
          msg: "follow ended",
          component: "session",
          session: this._cachedUid(),
          reason: leave.reason,
          duration_ms: leave.ms,
          records: leave.records,
        }),
    );
    this.reports = new DirectoryReports({
      send: (live) => this._sendReport(live),
      busy: () => this.live !== undefined,
      exists: () => this.exists(),
      burstMs: d.directoryBurstMs,
    });
  }

  exists(): boolean {
    // Once the schema is there it stays until an erase (forget), so it is looked up once, not on
    // every call.
    this._initialized ||= isSessionInitialized(this.d.db);
    return this._initialized && this.meta.load() !== undefined;
  }

  /** Call after the storage was replaced underneath (erase): nothing cached survives. */
  forget(): void {
    this._giveBackKept();
    // First, while the session's metadata is still cached: each follower's line names the session.
    this.followers.endAll(TailEndReason.GONE);
    this._initialized = false;
    this.meta.forget();
    this.journal = new Journal(this.d.db, this.d.maxEventBytes, this.d.clock);
    this.cache.reset();
    this.blobIndex.forget();
    this.reports.forget();
  }

  /** Stores this turn's large parts as blobs before their records commit; undefined without a bucket. */
  blobWriter(): EventExternalizer | undefined {
    const b = this.d.blobs;
    if (!b) return undefined;
    const meta = this.meta.load()!;
    return createBlobWriter({ tenant: meta.tenant, maxInline: b.maxInline, store: b.store, own: (shas) => b.own(meta.tenant, [meta.uid], shas) });
  }

  /**
   * Every record decoded, with every blob reference resolved and checked; undefined when none of
   * them references a blob (use the log as it is). What a replay audit serves its harnesses: never
   * a reference (docs/blobs.md). A turn and a recovery resolve only what they hand over
   * (resolvedHistory, resolvedLatest).
   */
  async resolvedEvents(): Promise<LoggedEvent[] | undefined> {
    if (!this.d.blobs || !this.blobIndex.any()) return undefined;
    const events = this.loggedEvents();
    const resolve = this._resolver();
    const out: LoggedEvent[] = [];
    for (const e of events) out.push({ seq: e.seq, event: await resolve(e.event) });
    return out;
  }

  /**
   * The history of an execution starting after seq `to` (TurnLog.history: from its latest
   * compaction point on), every blob reference in it resolved and checked; undefined when none of
   * records 1..`to` references a blob. Only the blobs in that history are read.
   */
  async resolvedHistory(to: bigint): Promise<Event[] | undefined> {
    if (!this.d.blobs || !this.blobIndex.any(to)) return undefined;
    const resolve = this._resolver();
    const out: Event[] = [];
    for (const e of this.cache.history(to)) out.push(await resolve(e));
    return out;
  }

  /**
   * The parse a recovery re-drives (`current`), with the blob references its harness is served
   * resolved: the latest execution's inputs and effects, and its history (resolvedHistory). The
   * result holds the latest execution alone (ParsedLog.latestOnly). As it is when the session
   * has no blob.
   */
  async resolvedLatest(): Promise<ParsedLog> {
    const parsed = this.parsedLog();
    if (!this.d.blobs || !parsed.ok || !this.blobIndex.any(0n)) return parsed;
    const ex = parsed.executions[parsed.executions.length - 1];
    if (!ex) return parsed;
    const resolve = this._resolver();
    const inputs: Message[] = [];
    for (const m of ex.inputs) {
      const r = await resolve(create(EventSchema, { executionId: ex.id, kind: EventKind.EVENT_INPUT, body: { case: "message", value: m } }));
      inputs.push(r.body.case === "message" ? r.body.value : m);
    }
    const effects: LoggedEvent[] = [];
    for (const e of ex.effects) effects.push({ seq: e.seq, event: await resolve(e.event) });
    const history = (await this.resolvedHistory(ex.firstSeq - 1n)) ?? historyOf(parsed, ex);
    return { ok: true, events: [], executions: [{ ...ex, inputs, effects }], lastForkSeq: parsed.lastForkSeq, latestOnly: { history: () => history } };
  }

  /** Resolves an event's blob references, reading each blob once however often it is named. */
  private _resolver(): (event: Event) => Promise<Event> {
    const b = this.d.blobs!;
    const tenant = this.meta.load()!.tenant;
    const fetched = new Map<string, Promise<Uint8Array>>();
    const fetch = (ref: BlobReference) => {
      let p = fetched.get(ref.sha256);
      if (!p) {
        p = readBlob(b.store, tenant, ref.sha256).then((data) => {
          if (!data) throw new BlobMismatchError(ref, "is missing from the blob store");
          return data;
        });
        fetched.set(ref.sha256, p);
      }
      return p;
    };
    return (event) => (blobRefsOf(event).length === 0 ? Promise.resolve(event) : resolveEvent(event, fetch, sha256Hex));
  }

  /** The session's uid for a log line, as far as this object knows it without failing (its storage may be gone). */
  private _cachedUid(): string {
    try {
      return this.meta.load()?.uid ?? "";
    } catch {
      return "";
    }
  }

  get uid(): string {
    return this.meta.load()!.uid;
  }

  render(): Session {
    return renderSession(this.meta.load()!, this.journal.head(), this.live !== undefined);
  }

  takeGuard(): LiveTurn {
    let finish!: () => void;
    const done = new Promise<void>((ok) => (finish = ok));
    const live: LiveTurn = { abort: new AbortController(), executionId: "", done, finish };
    this.live = live;
    return live;
  }

  /**
   * Releases the guard if `live` still holds it, and gives back its execution slot, or keeps it
   * for the session's next turn (the limiter is told, once per slot). A kept slot still counts
   * against the tenant's limit, so a limit is never exceeded; it is kept only while the tenant is
   * at most half full, never when the limiter asked about it during the turn (it then trusts the
   * row for a while), and given up as soon as the limiter asks whether it is in use (runs()): at
   * the limit, or once the slot has been kept a while (objects/limits/tenant-limits.ts), so it
   * cannot hold a full tenant back.
   */
  release(live: LiveTurn): void {
    if (this.live === live) this.live = undefined;
    const lease = live.lease;
    const leases = this.d.leases;
    if (lease !== undefined && leases) {
      live.lease = undefined;
      const meta = this.meta.load();
      if (meta) {
        const slot = { owner: lease, tenant: meta.tenant, uid: meta.uid };
        if (live.keepSlot && !this._idleLease) {
          this._idleLease = slot;
          if (this._toldKept !== lease) {
            this._toldKept = lease;
            void leases.keep?.(slot.tenant, slot.uid, lease).catch(() => undefined);
          }
        } else this._giveBack(slot);
      }
    }
    live.finish();
  }

  /**
   * Not awaited: the turn is over either way, and a slot not given back is reclaimed by the
   * limiter, which asks this object (runs()) before it counts it.
   */
  private _giveBack(slot: { owner: string; tenant: string; uid: string }): void {
    void this.d.leases?.release(slot.tenant, slot.uid, slot.owner).catch(() => undefined);
  }

  /** Gives back the slot kept after the last turn, if any (the session is being erased). */
  private _giveBackKept(): void {
    const kept = this._idleLease;
    this._idleLease = undefined;
    if (kept) this._giveBack(kept);
  }

  /**
   * Takes a slot in the tenant's count of running executions for the operation holding `live`:
   * the slot the session's last turn kept, if any, else one from the limiter.
   * A refusal says how many run; the caller releases the guard and writes nothing.
   */
  async lease(live: LiveTurn): Promise<Outcome<true>> {
    const leases = this.d.leases;
    if (!leases) return success(true);
    const kept = this._idleLease;
    if (kept) {
      this._idleLease = undefined;
      live.lease = kept.owner;
      live.keepSlot = true;
      return success(true);
    }
    const meta = this.meta.load()!;
    const owner = `${this._instance}.${++this._turns}`;
    const r = await leases.acquire(meta.tenant, meta.uid, owner);
    if (!r.ok) {
      return failure(
        "tenant_busy",
        `tenant ${meta.tenant} already runs ${r.running} executions, its limit: wait for one to finish, then retry; nothing was written`,
      );
    }
    live.lease = owner;
    const limit = leases.limit ?? 0;
    live.keepSlot = leases.keep !== undefined && r.running !== undefined && keepsRows(r.running, limit);
    return success(true);
  }

  /**
   * Whether the turn that took the slot `owner` still runs on this instance (the limiter asks).
   * A slot kept after its turn is not running: it is given up here, and the limiter drops it.
   */
  runs(owner: string): boolean {
    if (this.live?.lease === owner) {
      // The limiter asks at the limit, or about a slot kept a while, and now trusts this row for a
      // while (it vouched for it): the slot must go back the moment the turn ends, not be kept.
      this.live.keepSlot = false;
      return true;
    }
    if (this._idleLease?.owner === owner) this._idleLease = undefined;
    return false;
  }

  models(): ModelInvoker {
    return this.d.models(this.meta.load()!.statics.model);
  }

  /** The current placement of this session's compute on the runtime (a fresh one each operation). */
  async place(harness: string, fence: bigint): Promise<Incarnation> {
    const inc = await this.runtime.create({ sessionUid: this.uid, harness });
    return { ...inc, fence };
  }

  /** A harness by registry name: built in, registered, or connected over the tunnel. */
  async served(name: string): Promise<ServedHarness | undefined> {
    const builtin = this.harnesses.get(name);
    if (builtin) return { harness: builtin };
    if (!this.d.remote) return undefined;
    const meta = this.meta.load()!;
    return this.d.remote(name, { tenant: meta.tenant, uid: meta.uid }, this.inbox);
  }

  async harness(name: string): Promise<Harness | undefined> {
    return (await this.served(name))?.harness;
  }

  describer(): DescribeHarness {
    return async (name) => {
      const harness = await this.harness(name);
      if (!harness) return undefined;
      // Served but not answering is not "not served": the cause goes to the caller (checklist §8.13 #88).
      const descriptor = await describeWithin(harness, DESCRIBE_TIMEOUT_MS).catch((e: unknown) => {
        throw new HarnessDescribeError(name, e);
      });
      if (!descriptor) throw new HarnessDescribeError(name, new Error(`no answer within ${DESCRIBE_TIMEOUT_MS / 1000} s`));
      return { name, harness, descriptor };
    };
  }

  /** The runtime that places `name`'s compute (its backend, or the built-in one). */
  async runtimeFor(name: string): Promise<Runtime> {
    return (await this.served(name))?.runtime ?? this.runtime;
  }

  /** The single alarm slot's owner: armed for the pending approval's deadline, else cleared. */
  async rearm(): Promise<void> {
    await this.d.setAlarm?.(this.meta.load()?.pending?.deadlineMs ?? null);
  }

  /** What turns and recoveries need for host-executed tools and approvals. */
  toolDeps(): NonNullable<LiveSinkOptions["tools"]> {
    return {
      sessionUid: this.uid,
      tools: this.d.tools,
      approvalsAllowed: true,
      defaultApprovalTimeoutSeconds: this.d.approvalTimeoutSeconds,
      now: this.d.now,
      knownCallIds: new Set(),
      onPark: (gate) => {
        if (gate.deadlineMs === undefined) return;
        this.meta.setDeadline(gate.deadlineMs);
        void this.rearm();
      },
    };
  }

  /** The journal as the controller sees it, with this session's projections applied in each append. */
  turnLog(): TurnLog {
    return {
      append: (events, opts) => this.append(events, opts),
      prepare: (events) => this.journal.prepare(events),
      commit: (prepared, opts) => this.commit(prepared, opts),
      head: () => this.journal.head(),
      events: (from, to) => this.cache.eventRange(from, to),
      history: (to) => this.cache.history(to),
    };
  }

  append(events: readonly Event[], opts: { expectedSeq?: bigint; fence: bigint; mintFence?: boolean }): AppendResult {
    const p = this.journal.prepare(events);
    return p.ok ? this.commit(p.events, opts) : p;
  }

  /** Appends prepared events (journal.prepare), with this session's projections, in one transaction. */
  commit(prepared: readonly PreparedEvent[], opts: { expectedSeq?: bigint; fence: bigint; mintFence?: boolean }): AppendResult {
    const meta = this.meta.load()!;
    const before: States = { computeState: meta.computeState, execState: meta.execState, pending: meta.pending };
    let after = before;
    const now = this.d.now();
    const r = this.journal.commit(prepared, {
      ...opts,
      project: (records: readonly AppendedRecord[]) => {
        after = projectRecords(
          before,
          records.map((x) => ({ seq: x.seq, event: x.decoded })),
        );
        this.blobIndex.note(records);
        // Only a change of state costs a write; most records change nothing.
        if (!sameStates(after, before)) this.meta.setStates(after, now);
      },
    });
    if (r.ok && !sameStates(after, before)) this.meta.committed(after, now);
    if (r.ok) {
      this.cache.appended(r.records);
      // After the transaction: a follower never sees a staged or rolled-back record.
      this.followers.committed(r.records);
    }
    return r;
  }

  /** Every record, decoded (from the in-memory cache: session-cache.ts). Do not change the array. */
  loggedEvents(): LoggedEvent[] {
    return this.cache.events();
  }

  events(from: bigint, to: bigint): LoggedEvent[] {
    return this.cache.range(from, to);
  }

  /**
   * The journal parsed into executions as operations on its latest execution need it, kept up to
   * date by every append (session-cache.ts `current`: past the memory budget, the latest
   * execution's alone). An operation over every execution uses `cache.parsed()`.
   */
  parsedLog(): ParsedLog {
    return this.cache.current();
  }

  private async _sendReport(live: boolean): Promise<void> {
    const meta: SessionMeta = this.meta.load()!;
    const row = createDirectoryRow(this.render(), this.journal.head(), meta);
    if (live) row.live = true;
    await this.d.directory(meta.tenant, row);
  }
}
