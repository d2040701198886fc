/**
 * The session core hosted by one SessionObject: metadata, journal, the live guard, turns,
 * recovery and audit.
 *
 * Plain TypeScript over a `SqlDb`: the Durable Object class (objects/session-object.ts) only wires
 * storage, clock and configuration and forwards its RPC methods here, and Node tests drive it on
 * sql.js. SQLite is the truth; the only in-memory state is the live turn (the overlap guard, which
 * is global because a Durable Object has exactly one live instance) and caches.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EventSchema, Lifecycle_Kind, LogRecordSchema, type Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { ExecUpdateSchema, SessionSchema, type ExecRequest, type ExecUpdate, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { mintExecutionId } from "../../proto/ids.js";
import type { ChainReport } from "../../proto/verify.js";
import { builtinHarnesses, DEFAULT_HARNESS, unknownHarnessMessage, type HarnessResolver } from "../../runtimes/builtin/index.js";
import { TurnInterruptedError } from "../controller/errors.js";
import { latestExecution, parseExecutions, type LoggedEvent } from "../controller/execution-log.js";
import type { DescribeHarness, DescribedHarness } from "../controller/identity.js";
import { runLiveTurn } from "../controller/live-turn.js";
import type { ModelInvoker } from "../controller/models.js";
import { replayJournal, type ReplayReport } from "../controller/replay.js";
import { resumeLatest, type ResumeOutcome } from "../controller/resume.js";
import type { RecordObserver, TurnLog } from "../controller/turn-writer.js";
import type { DirectoryRow } from "../directory/directory-store.js";
import { Journal, type AppendedRecord, type AppendResult, type StoredRecord } from "../journal/journal.js";
import type { SqlDb } from "../storage/sql.js";
import { busy, notFound, refusalFailure, resumeFailure, turnFailure } from "./failures.js";
import { FrameSink } from "./frames.js";
import { lifecycleEvent } from "./lifecycle.js";
import { INITIAL_STATES, MetaStore, type SessionMeta } from "./meta-store.js";
import { failure, success, type Failure, type Outcome } from "./outcomes.js";
import { projectEvents, type States } from "./projection.js";
import { isSessionInitialized, migrateSession } from "./schema.js";
import { renderSession } from "./session-view.js";

/** How long admission waits for a harness to describe itself (BEHAVIOUR.md §6.1). */
export const DESCRIBE_TIMEOUT_MS = 10_000;

export interface SessionHostDeps {
  db: SqlDb;
  now: () => number;
  /** The model invoker for a session whose `model` field is `sessionModel`. */
  models: (sessionModel: string) => ModelInvoker;
  /** Reports the session's latest state to its tenant's Directory. */
  directory: (tenant: string, row: DirectoryRow) => Promise<void>;
  /** The harnesses this host serves; the built-in echo harness by default. */
  harnesses?: HarnessResolver;
  maxEventBytes?: number;
}

export interface CreateArgs {
  tenant: string;
  uid: string;
  /** The static fields (metadata.project/name, harness, model, labels, annotations, origin, identity). */
  statics: Session;
}

export type ExecStart = { ok: true; frames: ReadableStream<Uint8Array> } | Failure;

export interface AuditReport {
  chain: ChainReport;
  replay?: ReplayReport;
}

interface LiveTurn {
  abort: AbortController;
}

export class SessionHost {
  private readonly _meta: MetaStore;
  private readonly _journal: Journal;
  private readonly _harnesses: HarnessResolver;
  private _live: LiveTurn | undefined;

  constructor(private readonly _d: SessionHostDeps) {
    this._harnesses = _d.harnesses ?? builtinHarnesses();
    this._meta = new MetaStore(_d.db);
    this._journal = new Journal(_d.db, _d.maxEventBytes);
  }

  /** Writes the metadata row: no events, no compute (BEHAVIOUR.md §4.1). */
  async create(args: CreateArgs): Promise<Outcome<Session>> {
    if (this._exists()) return failure("session_exists", `session ${args.uid} already exists`);
    migrateSession(this._d.db);
    const now = this._d.now();
    const meta: SessionMeta = { tenant: args.tenant, uid: args.uid, statics: args.statics, createMs: now, updateMs: now, ...INITIAL_STATES };
    this._d.db.transaction(() => this._meta.insert(meta));
    const session = this._render();
    await this._syncDirectory(session);
    return success(session);
  }

  get(): Outcome<Session> {
    return this._exists() ? success(this._render()) : notFound();
  }

  /** Records with from <= seq <= to (to = 0: head), at most `limit`, verbatim. */
  read(from: bigint, to: bigint, limit: number): Outcome<StoredRecord[]> {
    if (!this._exists()) return notFound();
    return success(this._journal.read(from, to, limit));
  }

  /**
   * Audit: walk the chain (and check it against the head the Directory anchored, which a bare
   * chain cannot vouch for); with `replay`, re-run every completed execution against the journal.
   * Never writes.
   */
  async audit(replay: boolean, anchor?: { seq: number; hash: string }): Promise<Outcome<AuditReport>> {
    if (!this._exists()) return notFound();
    const chain = checkAnchor(this._journal.verify(), anchor, (seq) => this._journal.read(seq, seq, 1)[0]?.hash);
    if (!replay) return success({ chain });
    const report = await replayJournal(this._loggedEvents(), {
      sessionUid: this._meta.load()!.uid,
      describe: this._describer(),
      defaultHarness: DEFAULT_HARNESS,
      models: this._models(),
    });
    return success({ chain, replay: report });
  }

  /**
   * One Exec. Routing errors come back before any frame; otherwise the stream's first frame is the
   * Session, then each record as it commits (and deltas), then the end or a failure frame. An
   * inputless Exec on a session whose latest execution never ended recovers that execution.
   */
  exec(req: ExecRequest): ExecStart {
    if (!this._exists()) return notFound();
    const meta = this._meta.load()!;
    const name = req.harness || meta.statics.harness || DEFAULT_HARNESS;
    if (!this._harnesses.get(name)) return failure("unknown_harness", unknownHarnessMessage(name, this._harnesses));
    const out = new FrameSink();
    out.update(updateBytes({ case: "session", value: this._render() }));
    if (req.deadlineUnix > 0n && BigInt(this._d.now()) >= req.deadlineUnix * 1000n) {
      out.fail(failure("deadline_exceeded", "deadline_unix is already in the past: nothing was run or written"));
      return { ok: true, frames: out.stream };
    }
    if (this._live) {
      out.fail(busy());
      return { ok: true, frames: out.stream };
    }
    // The guard is taken before the first await, so an overlapping call can never slip in.
    const live = this._takeGuard();
    void this._runExec(live, req, name, out);
    return { ok: true, frames: out.stream };
  }

  /**
   * Resume (BEHAVIOUR.md §4.9): re-drive the latest execution if it never ended, then journal
   * LIFECYCLE(RESUME) under the recovery's fresh fence. A session with nothing to recover just
   * gets the marker.
   */
  async resume(): Promise<Outcome<Session>> {
    if (!this._exists()) return notFound();
    if (this._live) return busy();
    const live = this._takeGuard();
    let fence: bigint | undefined;
    try {
      const outcome = await this._recover(live, () => (fence = this._journal.mintFence()), () => undefined);
      const failed = resumeFailure(outcome);
      if (failed) return failed;
      fence ??= this._journal.mintFence();
      const marked = this._append([lifecycleEvent(Lifecycle_Kind.LIFECYCLE_RESUME)], { fence });
      if (!marked.ok) return refusalFailure(marked);
      return success(this._release(live));
    } finally {
      this._release(live);
      await this._syncDirectory(this._render()).catch(() => undefined);
    }
  }

  private async _runExec(live: LiveTurn, req: ExecRequest, name: string, out: FrameSink): Promise<void> {
    const observe: RecordObserver = (records) => {
      for (const r of records) out.update(updateBytes({ case: "record", value: logRecordOf(r) }));
    };
    let result: Failure | undefined;
    const stopDeadline = this._armDeadline(live, req.deadlineUnix);
    try {
      if (req.inputs.length === 0 && this._interrupted()) {
        if (req.expectedLastSeq !== undefined && req.expectedLastSeq !== this._journal.head().seq) {
          result = refusalFailure({ ok: false, reason: "conflict", head: this._journal.head().seq, expected: req.expectedLastSeq });
          return;
        }
        result = resumeFailure(await this._recover(live, () => this._journal.mintFence(), observe, out));
        return;
      }
      const admitted = await this._admit(name);
      if (!admitted.ok) {
        result = admitted;
        return;
      }
      const executionId = mintExecutionId();
      const outcome = await runLiveTurn(
        {
          sessionUid: this._meta.load()!.uid,
          executionId,
          harnessName: name,
          harness: admitted.value.harness,
          descriptor: admitted.value.descriptor,
          inputs: req.inputs,
          config: req.config,
          resumeFromSeq: req.resumeFromSeq,
          expectedSeq: req.expectedLastSeq,
          signal: live.abort.signal,
        },
        { log: this._turnLog(), models: this._models(), observe, onDelta: deltaRelay(out, executionId) },
      );
      result = turnFailure(outcome);
    } catch (e) {
      console.error(JSON.stringify({ level: "error", msg: "turn crashed", error: e instanceof Error ? e.name : typeof e }));
      result = failure("internal", "internal error while running the turn; the journal is intact and Resume can recover it");
    } finally {
      stopDeadline();
      this._release(live);
      await this._syncDirectory(this._render()).catch(() => undefined);
      if (result) out.fail(result);
      else out.close();
    }
  }

  /** Re-drives the latest execution if it never ended (controller Resume). */
  private _recover(live: LiveTurn, mintFence: () => bigint, observe: RecordObserver, out?: FrameSink): Promise<ResumeOutcome> {
    const events = this._loggedEvents();
    const parsed = parseExecutions(events);
    const executionId = parsed.ok ? (latestExecution(parsed)?.id ?? "") : "";
    return resumeLatest(events, {
      sessionUid: this._meta.load()!.uid,
      log: this._turnLog(),
      mintFence,
      place: canPlace,
      describe: this._describer(),
      defaultHarness: DEFAULT_HARNESS,
      models: this._models(),
      observe,
      onDelta: out && deltaRelay(out, executionId),
      signal: live.abort.signal,
    });
  }

  /** Admission (BEHAVIOUR.md §6.1): describe within the bound, then CanPlace. Writes nothing. */
  private async _admit(name: string): Promise<Outcome<DescribedHarness>> {
    const described = await this._describer()(name);
    if (!described) return failure("harness_unavailable", `harness "${name}" did not describe itself within 10 s; retry later`);
    const refused = canPlace(described);
    return refused ? failure("unplaceable", refused) : success(described);
  }

  private _describer(): DescribeHarness {
    return async (name) => {
      const harness = this._harnesses.get(name);
      if (!harness) return undefined;
      const descriptor = await describeWithin(harness, DESCRIBE_TIMEOUT_MS);
      return descriptor && { name, harness, descriptor };
    };
  }

  private _interrupted(): boolean {
    const parsed = parseExecutions(this._loggedEvents());
    if (!parsed.ok) return false;
    const latest = latestExecution(parsed);
    return latest !== undefined && latest.endState === undefined;
  }

  private _models(): ModelInvoker {
    return this._d.models(this._meta.load()!.statics.model);
  }

  private _takeGuard(): LiveTurn {
    const live: LiveTurn = { abort: new AbortController() };
    this._live = live;
    return live;
  }

  /** Releases the guard if `live` still holds it; returns the session as it now stands. */
  private _release(live: LiveTurn): Session {
    if (this._live === live) this._live = undefined;
    return this._render();
  }

  private _armDeadline(live: LiveTurn, deadlineUnix: bigint): () => void {
    if (deadlineUnix <= 0n) return () => undefined;
    const ms = Number(deadlineUnix * 1000n - BigInt(this._d.now()));
    const t = setTimeout(() => live.abort.abort(new TurnInterruptedError("deadline", "the turn's deadline_unix passed")), Math.max(0, ms));
    return () => clearTimeout(t);
  }

  /** The journal as the controller sees it, with this session's projections applied in each append. */
  private _turnLog(): TurnLog {
    return {
      append: (events, opts) => this._append(events, opts),
      head: () => this._journal.head(),
      events: (from, to) => this._events(from, to).map((e) => e.event),
    };
  }

  private _append(events: readonly Event[], opts: { expectedSeq?: bigint; fence: bigint; mintFence?: boolean }): AppendResult {
    const meta = this._meta.load()!;
    const before: States = { computeState: meta.computeState, execState: meta.execState };
    let after = before;
    const now = this._d.now();
    const r = this._journal.append(events, {
      ...opts,
      project: (records: readonly AppendedRecord[]) => {
        after = projectEvents(before, records.map((x) => x.decoded));
        if (after.computeState !== before.computeState || after.execState !== before.execState) {
          this._meta.setStates(after.computeState, after.execState, now);
        }
      },
    });
    if (r.ok && after !== before) this._meta.committed(after.computeState, after.execState, now);
    return r;
  }

  private _loggedEvents(): LoggedEvent[] {
    return this._events(1n, 0n);
  }

  private _events(from: bigint, to: bigint): LoggedEvent[] {
    const out: LoggedEvent[] = [];
    let at = from;
    for (;;) {
      const page = this._journal.read(at, to, 512);
      for (const r of page) out.push({ seq: r.seq, event: fromBinary(EventSchema, r.event) });
      if (page.length < 512) return out;
      at = page[page.length - 1]!.seq + 1n;
    }
  }

  private _exists(): boolean {
    return isSessionInitialized(this._d.db) && this._meta.load() !== undefined;
  }

  private _render(): Session {
    return renderSession(this._meta.load()!, this._journal.head(), this._live !== undefined);
  }

  private async _syncDirectory(session: Session): Promise<void> {
    const meta = this._meta.load()!;
    const head = this._journal.head();
    await this._d.directory(meta.tenant, {
      uid: meta.uid,
      project: session.metadata?.project ?? "",
      createMs: meta.createMs,
      updateMs: meta.updateMs,
      headSeq: Number(head.seq),
      headHash: head.hash,
      session: toBinary(SessionSchema, session),
    });
  }
}

/** CanPlace (CONTRACT.md §6.1): the built-in runtime has no memory snapshots. */
function canPlace(h: DescribedHarness): string | undefined {
  if (h.descriptor.capabilities?.resumability !== Resumability.REQUIRES_MEMORY_SNAPSHOT) return undefined;
  return `harness "${h.name}" requires memory snapshots, which this runtime cannot take`;
}

/** A bare chain cannot show truncation; the head the Directory anchored can. */
function checkAnchor(chain: ChainReport, anchor: { seq: number; hash: string } | undefined, hashAt: (seq: bigint) => string | undefined): ChainReport {
  if (!chain.ok || !anchor || anchor.seq <= 0) return chain;
  const seq = BigInt(anchor.seq);
  if (seq > chain.records) {
    return { ...chain, ok: false, firstBadSeq: chain.records + 1n, reason: `the journal ends at seq ${chain.records}, but its head was anchored at seq ${seq}: records are missing` };
  }
  if (hashAt(seq) !== anchor.hash) {
    return { ...chain, ok: false, firstBadSeq: seq, reason: "the record at the anchored head has a different hash than was anchored" };
  }
  return chain;
}

function updateBytes(update: ExecUpdate["update"]): Uint8Array {
  return toBinary(ExecUpdateSchema, create(ExecUpdateSchema, { update }));
}

function deltaRelay(out: FrameSink, executionId: string) {
  return (chunk: string, done: boolean) => out.update(updateBytes({ case: "delta", value: { executionId, chunk, done } as never }));
}

function logRecordOf(r: AppendedRecord) {
  return create(LogRecordSchema, { seq: r.seq, prevHash: r.prevHash, contentHash: r.hash, fence: r.fence, event: r.decoded });
}

async function describeWithin(h: NonNullable<ReturnType<HarnessResolver["get"]>>, ms: number) {
  const ac = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined = undefined;
  try {
    return await Promise.race([
      Promise.resolve(h.describe(ac.signal)),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => {
          ac.abort();
          resolve(undefined);
        }, ms);
      }),
    ]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

