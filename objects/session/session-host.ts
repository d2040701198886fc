/**
 * The session core hosted by one SessionObject: metadata, journal, the live guard, and turns.
 *
 * Plain TypeScript over a `SqlDb`: the Durable Object class (objects/session-object.ts) only wires
 * storage, clock and bindings and forwards its RPC methods here, and Node tests drive it on sql.js.
 * SQLite is the truth; the only in-memory state is the live turn (the overlap guard) and caches.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { EventSchema, LogRecordSchema, type Event, type LogRecord } from "../../proto/gen/agentsessions/v1/common_pb.js";
import {
  ExecUpdateSchema,
  SessionSchema,
  type ExecRequest,
  type ExecUpdate,
  type Session,
} from "../../proto/gen/agentsessions/v1/session_pb.js";
import { Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { mintExecutionId } from "../../proto/ids.js";
import type { ChainReport } from "../../proto/verify.js";
import { builtinHarness, builtinHarnessNames, DEFAULT_HARNESS } from "../../runtimes/builtin/index.js";
import { describeRefusal, TurnInterruptedError, type AppendRefusal } from "../controller/errors.js";
import { runLiveTurn, type TurnOutcome } from "../controller/live-turn.js";
import type { ModelInvoker } from "../controller/models.js";
import type { TurnLog } from "../controller/turn-writer.js";
import type { DirectoryRow } from "../directory/directory-store.js";
import { Journal, type AppendedRecord, type AppendResult, type StoredRecord } from "../journal/journal.js";
import type { SqlDb } from "../storage/sql.js";
import { encodeFailureFrame, encodeUpdateFrame } from "./frames.js";
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
  models: ModelInvoker;
  /** Reports the session's latest state to its tenant's Directory. */
  directory: (tenant: string, row: DirectoryRow) => Promise<void>;
  maxEventBytes?: number;
}

export interface CreateArgs {
  tenant: string;
  uid: string;
  /** The static fields (metadata.project/name, harness, model, labels, annotations, origin, identity). */
  statics: Session;
}

export type ExecStart = { ok: true; frames: ReadableStream<Uint8Array> } | Failure;

interface LiveTurn {
  executionId: string;
  abort: AbortController;
}

export class SessionHost {
  private readonly _meta: MetaStore;
  private readonly _journal: Journal;
  private _live: LiveTurn | undefined;

  constructor(private readonly _d: SessionHostDeps) {
    this._meta = new MetaStore(_d.db);
    this._journal = new Journal(_d.db, _d.maxEventBytes);
  }

  /** Writes the metadata row: no events, no compute (BEHAVIOUR.md §4.1). */
  async create(args: CreateArgs): Promise<Outcome<Session>> {
    if (isSessionInitialized(this._d.db) && this._meta.load()) {
      return failure("session_exists", `session ${args.uid} already exists`);
    }
    migrateSession(this._d.db);
    const now = this._d.now();
    const meta: SessionMeta = {
      tenant: args.tenant,
      uid: args.uid,
      statics: args.statics,
      createMs: now,
      updateMs: now,
      ...INITIAL_STATES,
    };
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

  verify(): Outcome<ChainReport> {
    if (!this._exists()) return notFound();
    return success(this._journal.verify());
  }

  /**
   * Starts one turn. Routing errors come back before any frame; otherwise the stream's first frame
   * is the Session, then each record as it commits, then either the end or a failure frame.
   */
  exec(req: ExecRequest): ExecStart {
    if (!this._exists()) return notFound();
    const meta = this._meta.load()!;
    const harnessName = req.harness || meta.statics.harness || DEFAULT_HARNESS;
    const harness = builtinHarness(harnessName);
    if (!harness) {
      return failure(
        "unknown_harness",
        `unknown harness "${harnessName}": this host serves ${builtinHarnessNames().join(", ")}`,
      );
    }
    const out = new FrameSink();
    out.update(create(ExecUpdateSchema, { update: { case: "session", value: this._render() } }));

    if (req.deadlineUnix > 0n && BigInt(this._d.now()) >= req.deadlineUnix * 1000n) {
      out.fail(failure("deadline_exceeded", "deadline_unix is already in the past: nothing was run or written"));
      return { ok: true, frames: out.stream };
    }
    if (this._live) {
      out.fail(failure("session_busy", "another turn is running on this session: wait for it to finish, then retry"));
      return { ok: true, frames: out.stream };
    }
    // The guard is taken before the first await, so an overlapping Exec can never slip in.
    const live: LiveTurn = { executionId: mintExecutionId(), abort: new AbortController() };
    this._live = live;
    void this._runTurn(live, req, harnessName, harness, out).finally(() => {
      if (this._live === live) this._live = undefined;
    });
    return { ok: true, frames: out.stream };
  }

  private async _runTurn(
    live: LiveTurn,
    req: ExecRequest,
    harnessName: string,
    harness: NonNullable<ReturnType<typeof builtinHarness>>,
    out: FrameSink,
  ): Promise<void> {
    const stopDeadline = this._armDeadline(live, req.deadlineUnix);
    let result: Failure | undefined;
    try {
      const descriptor = await describeWithin(harness, DESCRIBE_TIMEOUT_MS);
      if (!descriptor) {
        result = failure("harness_unavailable", `harness "${harnessName}" did not describe itself within 10 s; retry later`);
        return;
      }
      // CanPlace (CONTRACT.md §6.1): the built-in runtime has no memory snapshots.
      if (descriptor.capabilities?.resumability === Resumability.REQUIRES_MEMORY_SNAPSHOT) {
        result = failure("unplaceable", `harness "${harnessName}" requires memory snapshots, which this runtime cannot take`);
        return;
      }
      const outcome = await runLiveTurn(
        {
          sessionUid: this._meta.load()!.uid,
          executionId: live.executionId,
          harnessName,
          harness,
          descriptor,
          inputs: req.inputs,
          config: req.config,
          resumeFromSeq: req.resumeFromSeq,
          expectedSeq: req.expectedLastSeq,
          signal: live.abort.signal,
        },
        {
          log: this._turnLog(),
          models: this._d.models,
          observe: (records) => {
            for (const r of records) out.update(create(ExecUpdateSchema, { update: { case: "record", value: logRecordOf(r) } }));
          },
          onDelta: (chunk, done) =>
            out.update(
              create(ExecUpdateSchema, { update: { case: "delta", value: { executionId: live.executionId, chunk, done } } }),
            ),
        },
      );
      result = turnFailure(outcome);
    } catch (e) {
      console.error(JSON.stringify({ level: "error", msg: "turn crashed", error: errorName(e) }));
      result = failure("internal", "internal error while running the turn; the journal is intact, Resume can recover it");
    } finally {
      stopDeadline();
      this._live = undefined;
      await this._syncDirectory(this._render()).catch(() => undefined);
      if (result) out.fail(result);
      else out.close();
    }
  }

  private _armDeadline(live: LiveTurn, deadlineUnix: bigint): () => void {
    if (deadlineUnix <= 0n) return () => undefined;
    const ms = Number(deadlineUnix * 1000n - BigInt(this._d.now()));
    const t = setTimeout(
      () => live.abort.abort(new TurnInterruptedError("deadline", "the turn's deadline_unix passed")),
      Math.max(0, ms),
    );
    return () => clearTimeout(t);
  }

  /** The journal as the controller sees it, with this session's projections applied in each append. */
  private _turnLog(): TurnLog {
    return {
      append: (events, opts) => this._append(events, opts),
      head: () => this._journal.head(),
      events: (from, to) => this._events(from, to),
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

  private _events(from: bigint, to: bigint): Event[] {
    const out: Event[] = [];
    let at = from;
    for (;;) {
      const page = this._journal.read(at, to, 512);
      for (const r of page) out.push(fromBinary(EventSchema, r.event));
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

/** Collects Exec frames into the stream handed to the Worker; a detached reader never fails a turn. */
class FrameSink {
  readonly stream: ReadableStream<Uint8Array>;
  private _ctl!: ReadableStreamDefaultController<Uint8Array>;
  private _open = true;

  constructor() {
    this.stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        this._ctl = c;
      },
      cancel: () => {
        this._open = false;
      },
    });
  }

  update(u: ExecUpdate): void {
    this._push(encodeUpdateFrame(toBinary(ExecUpdateSchema, u)));
  }

  fail(f: Failure): void {
    this._push(encodeFailureFrame(f));
    this.close();
  }

  close(): void {
    if (!this._open) return;
    this._open = false;
    try {
      this._ctl.close();
    } catch {
      // The reader went away; the turn's records are durable regardless.
    }
  }

  private _push(bytes: Uint8Array): void {
    if (!this._open) return;
    try {
      this._ctl.enqueue(bytes);
    } catch {
      this._open = false;
    }
  }
}

function turnFailure(o: TurnOutcome): Failure | undefined {
  switch (o.kind) {
    case "completed":
      return undefined;
    case "refused":
      return refusalFailure(o.refusal);
    case "failed":
      if (o.stopped) return refusalFailure(o.stopped);
      if (o.code === Code.DeadlineExceeded) return failure("deadline_exceeded", `the turn passed its deadline: ${o.message}`);
      if (o.code === Code.Canceled) return failure("canceled", `the turn was canceled: ${o.message}`);
      return failure("turn_failed", `the turn failed and an ERROR record was journaled: ${o.message}`);
  }
}

function refusalFailure(r: AppendRefusal): Failure {
  switch (r.reason) {
    case "conflict":
      return failure(
        "cas_conflict",
        `${describeRefusal(r)}; another writer advanced the log: read the session and retry with expected_last_seq ${r.head}`,
      );
    case "fenced":
      return failure("fenced", `${describeRefusal(r)}; a newer placement owns the session: retry`);
    case "too_large":
      return failure("event_too_large", `${describeRefusal(r)}; send large content by URI with a digest instead`);
    case "invalid_event":
      return failure("invalid_event", describeRefusal(r));
  }
}

function notFound(): Failure {
  return failure("session_not_found", "session not found: check the uid (ListSessions shows this tenant's sessions)");
}

function logRecordOf(r: AppendedRecord): LogRecord {
  return create(LogRecordSchema, { seq: r.seq, prevHash: r.prevHash, contentHash: r.hash, fence: r.fence, event: r.decoded });
}

async function describeWithin(h: NonNullable<ReturnType<typeof builtinHarness>>, ms: number) {
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

function errorName(e: unknown): string {
  return e instanceof Error ? e.name : typeof e;
}
