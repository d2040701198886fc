/**
 * SessionObject: the Durable Object that is the single writer of one session's journal.
 *
 * Thin on purpose: the constructor wires SQLite storage, the clock, the configured
 * harnesses and model provider, the Directory and erasure; each RPC method decodes its arguments
 * and delegates to SessionHost (objects/session/). Results cross the RPC boundary as data
 * (outcomes and protobuf bytes), never as thrown errors.
 */
import type { Ending } from "../../proto/record-envelopes.js";
import { DurableObject } from "cloudflare:workers";
import { toBinary } from "@bufbuild/protobuf";
import { decodeBinary } from "../../proto/binary-reader.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { ExecRequestSchema, SessionSchema, type Session } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { EventSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { resolveRemoteHarness } from "../tunnel/served-harness.js";
import { servedBuiltins } from "../../runtimes/builtin/index.js";
import { hostConfig, hostLimits } from "../config.js";
import { createModelInvoker } from "../controller/models.js";
import { createDirectoryRow } from "../directory/directory-row.js";
import type { DirectoryRow } from "../directory/directory-store.js";
import { directoryStub, type Env, limiterStub } from "../env.js";
import type { LimitSettings } from "../limits/tenant-limits.js";
import type { StoredRecord } from "../journal/journal.js";
import { createOpenAiChatProvider } from "../models/openai-chat.js";
import type { Outcome } from "./outcomes.js";
import type { States } from "./projection.js";
import { SessionHost, type AuditReport, type Decision, type ExecStart, type ForkClone, type ForkSource } from "./facade.js";
import { timedProvider } from "../models/timed.js";
import { parseSha256 } from "../../proto/blob-ref.js";
import { createR2BlobStore } from "../blobs/blob-store.js";
import { createToolExecutor } from "../tools/executor.js";
import { withRequestId } from "../request-context.js";
import { sqlDbFromStorage } from "../storage/do-sql.js";
import { configureLogLevel, logRpc } from "../log-line.js";
import type { FrameSinkOptions } from "../exec-frames.js";

/**
 * An Exec answered in the caller's protocol (worker/exec-stream-route.ts): its ending, and when
 * the Worker took the request (Date.now()), from which the request line's times are counted.
 */
export interface ExecWire {
  ending: Ending;
  startedMs: number;
}

export class SessionObject extends DurableObject<Env> {
  private readonly _host: SessionHost;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    configureLogLevel(env);
    const config = hostConfig(env);
    const provider = config.model && timedProvider(createOpenAiChatProvider(config.model));
    const limits = hostLimits(env);
    const settings: LimitSettings = { ratePerSecond: limits.ratePerSecond, burst: limits.rateBurst, maxConcurrent: limits.maxConcurrentExecs };
    this._host = new SessionHost({
      db: sqlDbFromStorage(ctx.storage),
      now: () => Date.now(),
      models: (sessionModel) => createModelInvoker({ sessionModel, defaultModel: config.defaultModel, provider }),
      harnesses: servedBuiltins(config),
      directory: async (tenant, row) => {
        await directoryStub(env, tenant).upsert(row);
      },
      erase: async () => {
        await ctx.storage.deleteAlarm();
        await ctx.storage.deleteAll();
      },
      tools: createToolExecutor(config),
      maxEventBytes: limits.maxEventBytes,
      clock: Date.now,
      blobs: env.BLOBS && {
        store: createR2BlobStore(env.BLOBS),
        maxInline: limits.blobInlineMaxBytes,
        own: (tenant, uids, shas) => directoryStub(env, tenant).ownBlobs(uids, shas),
      },
      follow: limits.follow,
      cacheMaxHeapBytes: limits.journalCacheMaxBytes,
      leases:
        settings.maxConcurrent > 0
          ? {
              acquire: (tenant, uid, owner) => limiterStub(env, tenant).acquire(settings, tenant, uid, owner),
              release: (tenant, uid, owner) => limiterStub(env, tenant).release(uid, owner),
              keep: (tenant, uid, owner) => limiterStub(env, tenant).keep(uid, owner),
              limit: settings.maxConcurrent,
            }
          : undefined,
      approvalTimeoutSeconds: config.approvalTimeoutSeconds,
      remote: (name, session, inbox) => resolveRemoteHarness(env, name, session, inbox),
      setAlarm: async (atMs) => {
        if (atMs === null) await ctx.storage.deleteAlarm();
        else await ctx.storage.setAlarm(atMs);
      },
    });
  }

  async create(tenant: string, uid: string, statics: Uint8Array): Promise<Outcome<Uint8Array>> {
    return sessionBytes(await this._host.create({ tenant, uid, statics: decodeBinary(SessionSchema, statics) }));
  }

  get(): Outcome<Uint8Array> {
    return sessionBytes(this._host.get());
  }

  /** A listing's question for a live Directory row (objects/session/directory-reports.ts). */
  listing(): Outcome<Uint8Array> {
    return sessionBytes(this._host.listing());
  }

  /**
   * `requestId` tags this call's log lines, the turn's included (objects/request-context.ts);
   * `endFrame`: the stream closes with the end frame (objects/exec-frames.ts), which a Worker that
   * asks for it can answer at once, without waiting to see the stream close. `whole`: the call
   * answers when the first chunk is due, with the whole answer as bytes if the turn ended by then.
   */
  exec(request: Uint8Array, requestId = "", endFrame = false, whole = false, wire?: ExecWire): Promise<ExecStart> {
    const options: FrameSinkOptions = { endFrame, whole };
    if (wire) {
      // The answer as the client reads it, which the Worker hands on untouched: its line is written here.
      options.ending = wire.ending;
      options.ended = (code, firstChunkMs) => {
        const { tenant, uid } = this._host.names();
        logRpc({
          requestId,
          tenant,
          session: uid,
          operation: "Exec",
          code,
          durationMs: Date.now() - wire.startedMs,
          firstMessageMs: firstChunkMs === undefined ? undefined : firstChunkMs - wire.startedMs,
        });
      };
    }
    return withRequestId(requestId, () => this._host.exec(decodeBinary(ExecRequestSchema, request), options));
  }

  /** The tenant's limiter asks whether a turn it counts still runs (false once this object restarted). */
  runs(owner: string): boolean {
    return this._host.runs(owner);
  }

  /** An event of a tunnel stream (its bytes), or its end (null, with why); false when nothing reads it. */
  deliver(stream: string, event: Uint8Array | null, closed: string): boolean {
    return this._host.deliver(stream, event ? { event: decodeBinary(EventSchema, event) } : { closed: closed || "closed the stream" });
  }

  async resume(requestId = ""): Promise<Outcome<Uint8Array>> {
    return sessionBytes(await withRequestId(requestId, () => this._host.resume()));
  }

  async suspend(requestId = ""): Promise<Outcome<Uint8Array>> {
    return sessionBytes(await withRequestId(requestId, () => this._host.suspend()));
  }

  async cancel(executionId: string, reason: string): Promise<Outcome<Uint8Array>> {
    return sessionBytes(await this._host.cancel(executionId, reason));
  }

  /** Tombstones the session in its tenant's Directory (final head kept), then erases its storage. */
  async delete(tenant: string): Promise<Outcome<Uint8Array>> {
    return sessionBytes(
      await this._host.delete(async (final, headHash) => {
        const createMs = final.metadata?.createTime ? timestampMs(final.metadata.createTime) : 0;
        const row = createDirectoryRow(final, { seq: final.lastSeq, hash: headHash }, { createMs, updateMs: Date.now() });
        // The tombstone releases the blobs this session owned, in the same Directory call.
        await directoryStub(this.env, tenant).tombstone(row, Date.now(), tenant);
      }),
    );
  }

  approve(d: Decision): Outcome<{ session: Uint8Array; decision: StoredRecord }> {
    const r = this._host.approve(d);
    return r.ok ? { ok: true, value: { session: toBinary(SessionSchema, r.value.session), decision: r.value.decision } } : r;
  }

  /** Approval deadlines: the alarm is armed by the session and re-armed from stored state. */
  async alarm(): Promise<void> {
    await this._host.alarm();
  }

  /** Replay's answer as one byte stream of enveloped LogRecords (objects/session/record-stream.ts). */
  replay(from: bigint, to: bigint, ending: Ending): Outcome<ReadableStream<Uint8Array>> {
    return this._host.replay(from, to, ending);
  }

  /**
   * Tail's answer as one byte stream of enveloped TailResponses (objects/session/followers.ts);
   * with `ending`, the whole answer in that protocol, its OK ending after the end item.
   */
  tail(from: bigint, follow: boolean, ending?: Ending): Outcome<ReadableStream<Uint8Array>> {
    return this._host.tail(from, follow, ending);
  }

  read(from: bigint, to: bigint, limit: number): Outcome<StoredRecord[]> {
    return this._host.read(from, to, limit);
  }

  /** Whether this session's journal references the blob, and its length (GetBlob, docs/blobs.md). */
  blob(sha: string): Outcome<{ bytes: number }> {
    const hex = parseSha256(sha);
    if (!hex) return { ok: false, reason: "invalid_request", message: "sha256 must be 64 lowercase hex characters" };
    return this._host.blob(hex);
  }

  audit(replay: boolean, anchor?: { seq: number; hash: string }): Promise<Outcome<AuditReport>> {
    return this._host.audit(replay, anchor);
  }

  forkSource(atSeq: bigint, requestId = ""): Promise<Outcome<ForkSource>> {
    return withRequestId(requestId, () => this._host.forkSource(atSeq));
  }

  /** A fork child's prefix, packed, as much as fits in about `maxBytes` (worker/fork.ts). */
  readPacked(from: bigint, to: bigint, maxBytes: number): Outcome<{ pack: Uint8Array; last: bigint }> {
    return this._host.readPacked(from, to, maxBytes);
  }

  /** Begins, seeds and seals a fork child in one call where the prefix allows (objects/session/fork.ts). */
  forkChild(
    begin: { tenant: string; uid: string; statics: Uint8Array } | undefined,
    packs: Uint8Array[],
    seal: { atSeq: bigint; states: States; cloned?: boolean; atMs?: number } | undefined,
  ): Outcome<{ session: Uint8Array; row: DirectoryRow } | true> {
    return this._host.forkChild({ begin: begin && { ...begin, statics: decodeBinary(SessionSchema, begin.statics) }, packs, seal });
  }

  forkBegin(tenant: string, uid: string, statics: Uint8Array): Outcome<true> {
    return this._host.forkBegin(tenant, uid, decodeBinary(SessionSchema, statics));
  }

  forkSeed(records: StoredRecord[]): Outcome<true> {
    return this._host.forkSeed(records);
  }

  forkFinish(atSeq: bigint, states: States, cloned = false, atMs?: number): Outcome<{ session: Uint8Array; row: DirectoryRow }> {
    return this._host.forkFinish(atSeq, states, cloned, atMs);
  }

  /** A memory fork's parent: checkpoint, then clone `children` (docs/lifecycle.md "Memory forks"). */
  forkClone(atSeq: bigint, children: string[], requestId = ""): Promise<Outcome<ForkClone>> {
    return withRequestId(requestId, () => this._host.forkClone(atSeq, children));
  }

  forkRelease(children: string[], requestId = ""): Promise<void> {
    return withRequestId(requestId, () => this._host.forkRelease(children));
  }

  forkDiscard(): Promise<void> {
    return this._host.forkDiscard();
  }
}

function sessionBytes(r: Outcome<Session>): Outcome<Uint8Array> {
  return r.ok ? { ok: true, value: toBinary(SessionSchema, r.value) } : r;
}
