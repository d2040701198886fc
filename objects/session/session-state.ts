/**
 * What every session operation shares: the metadata row, the journal (appends go through the
 * projections here), the live guard, and the session's view of harnesses, models and runtime.
 * Internal to objects/session: the operations live in turns.ts, lifecycle-ops.ts, fork.ts and
 * audit.ts, and SessionHost is their facade.
 * @internal
 */
import { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability, type HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { create } from "@bufbuild/protobuf";
import { ComputeState, SnapshotRefSchema, type SnapshotRef } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { SessionSchema, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";

import { builtinHarnesses, type HarnessResolver } from "../../runtimes/builtin/index.js";
import { createBuiltinRuntime } from "../../runtimes/builtin/runtime.js";
import type { Harness } from "../../runtimes/harness-spi.js";
import type { Incarnation, Runtime } from "../../runtimes/runtime-spi.js";
import { StreamInbox } from "../../runtimes/tunnel/inbox.js";
import { HarnessDescribeError } from "../controller/errors.js";
import { randomHex } from "../../proto/ids.js";
import { currentRequestId } from "../request-context.js";
import type { LoggedEvent, ParsedLog } from "../controller/execution-log.js";
import type { DescribeHarness, DescribedHarness } from "../controller/identity.js";
import type { ModelInvoker } from "../controller/models.js";
import type { TurnLog } from "../controller/turn-writer.js";
import type { LiveSinkOptions } from "../controller/live-sink.js";
import type { ToolExecutor } from "../controller/tools.js";
import type { DirectoryRow } from "../directory/directory-store.js";
import { Journal, type AppendedRecord, type AppendResult, type PreparedEvent } from "../journal/journal.js";
import type { SqlDb } from "../storage/sql.js";
import { MetaStore, type SessionMeta } from "./meta-store.js";
import { failure, success, type Outcome } from "./outcomes.js";
import { projectRecords, sameStates, type States } from "./projection.js";
import { isSessionInitialized } from "./schema.js";
import { SessionCache } from "./session-cache.js";
import { type FollowLimits, Followers, TailEndReason } from "./followers.js";
import { InputHashCache } from "../controller/input-hash.js";
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
  /** Heartbeat, idle limit and queue bound of Tail followers (followers.ts); defaults without. */
  follow?: FollowLimits;
  /** Stored bytes of journal kept decoded in memory at most (session-cache.ts). */
  cacheMaxBytes?: number;
  /** Where structured log lines go (one JSON object each); console.log by default. */
  log?: (line: Record<string, unknown>) => void;
  /**
   * The tenant's count of running executions (objects/limits): a turn takes a slot before it runs
   * and gives it back when it ends; unset, nothing is counted (in-process tests).
   */
  leases?: ExecutionLeases;
}

/** Slots in the tenant's count of running executions, held by this object's turns. */
export interface ExecutionLeases {
  acquire(tenant: string, uid: string, owner: string): Promise<{ ok: true } | { ok: false; running: number }>;
  release(tenant: string, uid: string, owner: string): Promise<void>;
}

/** A placement decision, as logged (BEHAVIOUR.md §6.1): never content, config, fences or tokens. */
export interface PlacementLine {
  op: "admit" | "place" | "recheck" | "recover" | "fork";
  decision: "admitted" | "placed" | "refused" | "unavailable" | "unknown" | "mismatch" | "error";
  harness: string;
  harnessId?: string;
  runtime: string;
  startedMs: number;
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
}

export class SessionState {
  readonly meta: MetaStore;
  journal: Journal;
  /** The decoded journal and its parse, kept in memory (session-cache.ts). */
  readonly cache: SessionCache;
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
  private _turns = 0;

  constructor(readonly d: SessionHostDeps) {
    this.harnesses = d.harnesses ?? builtinHarnesses();
    this.runtime = d.runtime ?? createBuiltinRuntime();
    this.meta = new MetaStore(d.db);
    this.journal = new Journal(d.db, d.maxEventBytes);
    this.cache = new SessionCache(() => this.journal, d.cacheMaxBytes);
    this.followers = new Followers(() => this.journal, d.follow);
  }

  exists(): boolean {
    return isSessionInitialized(this.d.db) && this.meta.load() !== undefined;
  }

  /** Call after the storage was replaced underneath (erase): nothing cached survives. */
  forget(): void {
    this.meta.forget();
    this.journal = new Journal(this.d.db, this.d.maxEventBytes);
    this.cache.reset();
    this.followers.endAll(TailEndReason.GONE);
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

  /** Releases the guard if `live` still holds it, and gives back its execution slot. */
  release(live: LiveTurn): void {
    if (this.live === live) this.live = undefined;
    const lease = live.lease;
    if (lease !== undefined && this.d.leases) {
      live.lease = undefined;
      const meta = this.meta.load();
      // Not awaited: the turn is over either way, and a slot not given back is reclaimed by the
      // limiter, which asks this object (runs()) before it counts it.
      if (meta) void this.d.leases.release(meta.tenant, meta.uid, lease).catch(() => undefined);
    }
    live.finish();
  }

  /**
   * Takes a slot in the tenant's count of running executions for the operation holding `live`.
   * A refusal says how many run; the caller releases the guard and writes nothing.
   */
  async lease(live: LiveTurn): Promise<Outcome<true>> {
    if (!this.d.leases) return success(true);
    const meta = this.meta.load()!;
    const owner = `${this._instance}.${++this._turns}`;
    const r = await this.d.leases.acquire(meta.tenant, meta.uid, owner);
    if (!r.ok) {
      return failure(
        "tenant_busy",
        `tenant ${meta.tenant} already runs ${r.running} executions, its limit: wait for one to finish, then retry; nothing was written`,
      );
    }
    live.lease = owner;
    return success(true);
  }

  /** Whether the turn that took the slot `owner` still runs on this instance (the limiter asks). */
  runs(owner: string): boolean {
    return this.live?.lease === owner;
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
      // Served but not answering is not "not served": the cause goes to the caller (§8.13 #88).
      const descriptor = await describeWithin(harness, DESCRIBE_TIMEOUT_MS).catch((e: unknown) => {
        throw new HarnessDescribeError(name, e);
      });
      if (!descriptor) throw new HarnessDescribeError(name, new Error(`no answer within ${DESCRIBE_TIMEOUT_MS / 1000} s`));
      return { name, harness, descriptor };
    };
  }

  /** Admission (BEHAVIOUR.md §6.1): describe within the bound, then CanPlace. Writes nothing. */
  async admit(name: string): Promise<Outcome<DescribedHarness & { served: ServedHarness }>> {
    const startedMs = this.d.now();
    const line = (decision: PlacementLine["decision"], runtime: Runtime | undefined, harnessId?: string) =>
      this.logPlacement({ op: "admit", decision, harness: name, harnessId, runtime: (runtime ?? this.runtime).name, startedMs });
    const served = await this.served(name);
    if (!served) {
      line("unknown", undefined);
      return failure("unknown_harness", `harness "${name}" is not served here`);
    }
    const harness = served.harness;
    let descriptor;
    try {
      // A runtime backend describes a harness it hosts without starting it.
      descriptor = served.runtime
        ? await served.runtime.describe(name, AbortSignal.timeout(DESCRIBE_TIMEOUT_MS))
        : await describeWithin(harness, DESCRIBE_TIMEOUT_MS);
    } catch (e) {
      // A backend or harness that answered Describe with a terminal error (runtimes/http keeps the
      // backend's code, the retryable ones arriving as UNAVAILABLE; runtimes/tunnel gives a tunnel
      // harness's answer Code.Unknown) is not unavailable: retrying will not help
      // (BEHAVIOUR.md §6.1 "an answered error"; checklist §8.16 #150).
      if (e instanceof ConnectError && e.code !== Code.Unavailable) {
        line("error", served.runtime);
        const who = served.runtime ? `the ${served.runtime.name} runtime` : "the harness";
        return failure("internal", `${who} answered Describe for harness "${name}" with an error (${Code[e.code]}: ${e.rawMessage}); nothing was written`);
      }
      line("unavailable", served.runtime);
      return failure("harness_unavailable", `harness "${name}" cannot be described: ${e instanceof Error ? e.message : "error"}; retry when it is back`);
    }
    if (!descriptor) {
      line("unavailable", served.runtime);
      return failure("harness_unavailable", `harness "${name}" did not describe itself within 10 s; retry later`);
    }
    if (served.expectId && descriptor.id !== served.expectId) {
      line("mismatch", served.runtime, descriptor.id);
      return failure("harness_mismatch", `harness "${name}" is registered for descriptor id "${served.expectId}" but describes itself as "${descriptor.id}"`);
    }
    const described = { name, harness, descriptor, served };
    const refused = this.canPlace(described, served.runtime);
    line(refused ? "refused" : "admitted", served.runtime, descriptor.id);
    return refused ? failure("unplaceable", refused) : success(described);
  }

  /**
   * The live re-check (BEHAVIOUR.md §6.1; checklist §8.16 #151). A backend describes a harness it
   * has not started, so once its incarnation has dialled back, the harness on this session's own
   * connection is described and gated too: the registration's descriptor id, and CanPlace on that
   * backend. Runs after placement and before anything is journaled; writes nothing.
   */
  async recheckLive(name: string, served: ServedHarness, describe: DescribeHarness = this.describer()): Promise<Outcome<true>> {
    const rt = served.runtime;
    if (!rt) return success(true);
    const startedMs = this.d.now();
    const line = (decision: PlacementLine["decision"], harnessId?: string) =>
      this.logPlacement({ op: "recheck", decision, harness: name, harnessId, runtime: rt.name, startedMs });
    const live = await describe(name).catch((e: unknown) => {
      if (e instanceof HarnessDescribeError) return e;
      throw e;
    });
    if (!live || live instanceof HarnessDescribeError) {
      line("unavailable");
      const cause = live?.cause instanceof Error ? live.cause.message : "it is not served there";
      return failure(
        "harness_unavailable",
        `the ${rt.name} runtime placed harness "${name}", but it did not describe itself on its connection (${cause}); nothing was written, retry`,
      );
    }
    const id = live.descriptor.id;
    if (served.expectId && id !== served.expectId) {
      line("mismatch", id);
      return failure(
        "harness_mismatch",
        `harness "${name}" is registered for descriptor id "${served.expectId}" but the placed harness describes itself as "${id}"; nothing was written`,
      );
    }
    const refused = this.canPlace(live, rt);
    line(refused ? "refused" : "admitted", id);
    return refused
      ? failure("unplaceable", `${refused} (as the placed harness describes itself; its backend's Describe said otherwise); nothing was written`)
      : success(true);
  }

  /** One structured line per placement decision; refusals are INFO (the caller's problem, not ours). */
  logPlacement(p: PlacementLine): void {
    const meta = this.meta.load();
    const line = {
      level: p.decision === "unavailable" || p.decision === "error" ? "warn" : "info",
      msg: "placement",
      component: "placer",
      request_id: currentRequestId(),
      op: p.op,
      decision: p.decision,
      tenant: meta?.tenant ?? "",
      session: meta?.uid ?? "",
      harness: p.harness,
      harness_id: p.harnessId ?? "",
      runtime: p.runtime,
      duration_ms: this.d.now() - p.startedMs,
    };
    (this.d.log ?? ((l) => console.log(JSON.stringify(l))))(line);
  }

  /** CanPlace (CONTRACT.md §6.1): a memory-snapshot harness needs a runtime that takes them. */
  canPlace(h: DescribedHarness, runtime: Runtime = this.runtime): string | undefined {
    if (h.descriptor.capabilities?.resumability !== Resumability.REQUIRES_MEMORY_SNAPSHOT) return undefined;
    if (runtime.capabilities().memorySnapshot) return undefined;
    return `harness "${h.name}" requires memory snapshots, which the ${runtime.name} runtime cannot take`;
  }

  /**
   * Makes sure a runtime-backed harness has a live incarnation before it runs: restores a paused
   * or stopped one from `ref` (the session's own latest SUSPEND ref; a bare `{local: uid}` without
   * one), else creates one (idempotent on the backend); its process dials back before this
   * returns. The built-in and tunnel placements need nothing. A memory snapshot the backend can no
   * longer restore (its actor gone, crashed, or superseded) is `snapshot_unusable`: a fresh
   * incarnation would silently forget the session's in-memory state (docs/runtimes.md).
   */
  async ensurePlaced(name: string, served: ServedHarness, ref?: SnapshotRef): Promise<Outcome<true>> {
    const rt = served.runtime;
    if (!rt) return success(true);
    const startedMs = this.d.now();
    const line = (decision: PlacementLine["decision"]) => this.logPlacement({ op: "place", decision, harness: name, runtime: rt.name, startedMs });
    const paused = this.meta.load()!.placement;
    const restoring = paused === ComputeState.COMPUTE_WARM || paused === ComputeState.COMPUTE_COLD;
    const from = ref ?? create(SnapshotRefSchema, { local: this.uid });
    try {
      const spec = { sessionUid: this.uid, harness: name, dialback: await rt.dialback(name) };
      if (restoring) await rt.restore(from, spec);
      else await rt.create(spec);
    } catch (e) {
      if (restoring && from.memory && e instanceof ConnectError && e.code === Code.FailedPrecondition) {
        line("refused");
        return failure(
          "snapshot_unusable",
          `the ${rt.name} runtime cannot restore memory snapshot ${from.externalUri || from.local} of this session (${e.rawMessage}); nothing was written; the session's in-memory state cannot be brought back, so continue in a new session`,
        );
      }
      line("unavailable");
      return failure(
        "harness_unavailable",
        `the ${rt.name} runtime could not place harness "${name}": ${e instanceof Error ? e.message : "error"}; nothing was written, retry`,
      );
    }
    line("placed");
    this.meta.setPlacement(ComputeState.COMPUTE_LIVE);
    return success(true);
  }

  /** After a turn, a runtime-backed incarnation is paused warm (its worker held, its CPU freed). */
  async pauseWarm(served: ServedHarness): Promise<void> {
    const rt = served.runtime;
    if (!rt) return;
    try {
      await rt.snapshot({ id: this.uid, worker: "", address: "", runtime: rt.name, fence: this.journal.fence() }, "LOCAL");
      this.meta.setPlacement(ComputeState.COMPUTE_WARM);
    } catch {
      // A backend that cannot pause keeps the incarnation live; the next turn reuses it.
    }
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

  /** The journal parsed into executions, kept up to date by every append (session-cache.ts). */
  parsedLog(): ParsedLog {
    return this.cache.parsed();
  }

  async syncDirectory(): Promise<void> {
    const meta: SessionMeta = this.meta.load()!;
    const session = this.render();
    const head = this.journal.head();
    await this.d.directory(meta.tenant, {
      uid: meta.uid,
      project: session.metadata?.project ?? "",
      createMs: meta.createMs,
      updateMs: meta.updateMs,
      headSeq: Number(head.seq),
      headHash: head.hash,
      session: toBinary(SessionSchema, session),
    });
  }

  /** Reports to the Directory without failing the caller: a missed report is repaired by the next. */
  async syncDirectoryQuietly(): Promise<void> {
    await this.syncDirectory().catch(() => undefined);
  }
}

async function describeWithin(h: NonNullable<ReturnType<HarnessResolver["get"]>>, ms: number) {
  const ac = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
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
