/**
 * The TypeScript client SDK: a typed wrapper over the generated Connect clients of the Sessions API
 * and of our Audit, Retention, Blobs and Tail extensions (proto/agentsessions/edge/v1/), sharing one transport.
 *
 * Runs on Node 20+ and in Workers (it only needs `fetch`). Failures are `ConnectError`s with the
 * server's code and message; `describeError` turns one into a line a person can act on.
 * Used by the CLI (cli/) and the conformance suite; tested in test/node/sdk/client.test.ts.
 */
import { create, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { EventKind, Lifecycle_Kind, LogRecordSchema, MessageSchema, type LogRecord, type Message } from "../proto/gen/agentsessions/v1/common_pb.js";
import { encodeBinary } from "../proto/binary-writer.js";
import {
  CancelRequestSchema,
  CreateSessionRequestSchema,
  DeleteSessionRequestSchema,
  DeltaSchema,
  ExecRequestSchema,
  ExecState,
  GetSessionRequestSchema,
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
  ResumeRequestSchema,
  SessionSchema,
  Sessions,
  SuspendRequestSchema,
  type ApproveResponse,
  type Delta,
  type Session,
} from "../proto/gen/agentsessions/v1/session_pb.js";
import { Audit, type VerifyResponse } from "../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { Blobs } from "../proto/gen/agentsessions/edge/v1/blobs_pb.js";
import { BlobMismatchError, blobRefsOf, parseSha256, resolveEvent, type BlobReference } from "../proto/blob-ref.js";
import { Retention, type RetentionStatus, type SetRetentionResponse } from "../proto/gen/agentsessions/edge/v1/retention_pb.js";
import { Tail } from "../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { textOf, userText } from "../proto/messages.js";
import { tailSession, type TailEvent, type TailOptions } from "./tail.js";
import { unaryCall } from "./unary.js";
import { execUpdates, replayEncoded, replayRecords, STREAM_CALL, type StreamCall, type StreamWire, tailResponses } from "./server-stream.js";
import { concatBytes, hexOf } from "../proto/bytes.js";

export const DEFAULT_SERVER = "http://127.0.0.1:8787";

export interface ClientOptions {
  /** Base URL of the host; default http://127.0.0.1:8787. */
  server?: string;
  /** Bearer token sent as `Authorization: Bearer …`. */
  token?: string;
  /** Binary protobuf on the wire instead of JSON (default: binary). */
  binary?: boolean;
  /** Read sessions (get, list) with HTTP GET, which caches and CDNs can serve (default: POST). */
  httpGet?: boolean;
  fetch?: typeof globalThis.fetch;
}

export interface CreateOptions {
  project?: string;
  name?: string;
  harness?: string;
  model?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface ExecOptions {
  /** Target session uid; empty creates a session first. */
  session?: string;
  /** Plain strings become user text messages. */
  inputs?: (string | Message)[];
  harness?: string;
  config?: Uint8Array;
  resumeFromSeq?: bigint;
  /** CAS: the head the caller expects (0n = empty session); unset appends at head. */
  expectedLastSeq?: bigint;
  deadlineUnix?: bigint;
  signal?: AbortSignal;
  /** Called for each committed record as it arrives. */
  onRecord?: (record: LogRecord) => void;
  /** Called for each streamed chunk of a model completion (never journaled). */
  onDelta?: (delta: Delta) => void;
  /** Called with the first (and any final) session frame. */
  onSession?: (session: Session) => void;
  /**
   * A dropped Exec stream is re-attached with Tail from the last record it delivered, and read
   * until the turn's END or ERROR record (default true): the turn keeps running on the host.
   */
  reattach?: boolean;
  /** Called when the Exec stream dropped and the client re-attaches from `fromSeq`. */
  onReattach?: (fromSeq: bigint, why: string) => void;
}

export interface ForkOptions {
  /** The last parent record the children inherit; 0n or unset = the parent's head. */
  at?: bigint;
  /** Children to create, 1..128 (unset or <= 0: one). */
  count?: number;
  /** One name per child, or none (children are then unnamed; never the parent's name). */
  names?: string[];
  /** The children's labels, replacing the parent's (unset: none). */
  labels?: Record<string, string>;
}

/** Why a caller cancels (docs/contract.md §9); the server defaults to USER. */
export type CancelReason = "USER" | "TIMEOUT" | "INTERNAL";

export interface CancelOptions {
  /** Cancel only if this execution is the one running (or interrupted); unset = whichever is. */
  executionId?: string;
  reason?: CancelReason;
}

/**
 * One decision on a parked tool call (docs/behaviour.md §4.11). The tuple names the APPROVAL_REQUEST, as
 * the session's `pending_approval` shows it; a stale or foreign tuple is FAILED_PRECONDITION.
 */
export interface ApproveOptions {
  executionId: string;
  toolCallId: string;
  /** The seq of the APPROVAL_REQUEST record (> 0). */
  requestSeq: bigint;
  /** Required: true approves, false denies (the server never reads an absent decision as a denial). */
  approved: boolean;
  /** Journaled on the decision; an exact retry must repeat it. */
  reason?: string;
  /** Who decided (provenance only); an exact retry must repeat it. Unset equals all-empty. */
  identity?: { principal?: string; issuer?: string; subject?: string };
}

export interface VerifyOptions {
  /** Also re-run every completed execution against the journal (zero model calls expected). */
  replay?: boolean;
  signal?: AbortSignal;
}

export interface ExecResult {
  /** The first frame: the session the turn ran against, with the cursor it started from. */
  session: Session;
  /** A final session frame, when the stream carried one (approval park or recovery). */
  finalSession?: Session;
  records: LogRecord[];
  deltas: Delta[];
  /** Text of the turn's OUTPUT records, in order. */
  outputs: string[];
  /** The head after the turn: pass it as expectedLastSeq to extend the same session. */
  cursor: bigint;
}

export class SessionsClient {
  /** Where binary streams (sdk/server-stream.ts) and unary calls (sdk/unary.ts) are read off the wire; unset when the client speaks JSON. */
  private readonly _wire: StreamWire | undefined;
  /** ClientOptions.httpGet: GetSession and ListSessions go out as Connect GETs (connect-es's), which caches can keep. */
  private readonly _httpGet: boolean;
  /** Makes the Connect transport, on first use: a Replay read off the wire needs none (sdk/server-stream.ts STREAM_CALL). */
  private readonly _makeTransport: () => Transport;
  private _transport: Transport | undefined;
  private _raw: Client<typeof Sessions> | undefined;
  private _rawAudit: Client<typeof Audit> | undefined;
  private _rawBlobs: Client<typeof Blobs> | undefined;
  private _rawRetention: Client<typeof Retention> | undefined;
  private _rawTail: Client<typeof Tail> | undefined;

  constructor(opts: ClientOptions = {}) {
    const interceptors: Interceptor[] = [];
    if (opts.token) {
      const token = opts.token;
      interceptors.push((next) => (req) => {
        req.header.set("Authorization", `Bearer ${token}`);
        return next(req);
      });
    }
    const f = opts.fetch ?? globalThis.fetch;
    this._httpGet = opts.httpGet ?? false;
    const baseUrl = (opts.server ?? DEFAULT_SERVER).replace(/\/+$/, "");
    // Called as a plain function: a browser's fetch refuses any other `this`.
    if (opts.binary ?? true) {
      const stream = (f as { [STREAM_CALL]?: StreamCall })[STREAM_CALL];
      this._wire = { baseUrl, token: opts.token, fetch: (input, init) => f(input, init), stream };
    }
    this._makeTransport = () =>
      createConnectTransport({
        baseUrl,
        useBinaryFormat: opts.binary ?? true,
        useHttpGet: opts.httpGet ?? false,
        interceptors,
        // connect-web asks for redirect "error", which workerd refuses (docs/platform.md P3).
        fetch: (input, init) => f(input, { ...init, redirect: "manual" }),
      });
  }

  /** The Sessions service as connect-es generates it. */
  get raw(): Client<typeof Sessions> {
    return (this._raw ??= createClient(Sessions, this._t()));
  }

  /** The Audit service (our extension, not the contract), on the same transport as `raw`. @experimental */
  get rawAudit(): Client<typeof Audit> {
    return (this._rawAudit ??= createClient(Audit, this._t()));
  }

  /** The Blobs service (our extension: docs/blobs.md), on the same transport. @experimental */
  get rawBlobs(): Client<typeof Blobs> {
    return (this._rawBlobs ??= createClient(Blobs, this._t()));
  }

  /** The Retention service (our extension, not the contract; docs/retention.md). @experimental */
  get rawRetention(): Client<typeof Retention> {
    return (this._rawRetention ??= createClient(Retention, this._t()));
  }

  /** The Tail service (our extension), on the same transport. @experimental */
  get rawTail(): Client<typeof Tail> {
    return (this._rawTail ??= createClient(Tail, this._t()));
  }

  private _t(): Transport {
    return (this._transport ??= this._makeTransport());
  }

  create(o: CreateOptions = {}): Promise<Session> {
    const req = {
      session: {
        metadata: { project: o.project ?? "", name: o.name ?? "" },
        harness: o.harness ?? "",
        model: o.model ?? "",
        labels: o.labels ?? {},
        annotations: o.annotations ?? {},
      },
    };
    if (this._wire) return this._sessionCall("CreateSession", CreateSessionRequestSchema, req);
    return this.raw.createSession(req);
  }

  get(uid: string): Promise<Session> {
    if (this._wire && !this._httpGet) return this._sessionCall("GetSession", GetSessionRequestSchema, { uid });
    return this.raw.getSession({ uid });
  }

  /**
   * A Sessions call answered by a Session, read off the wire (sdk/unary.ts): what `create`, `get`,
   * `suspend`, `resume`, `cancel` and `delete` send when the client speaks binary.
   */
  private _sessionCall<Desc extends DescMessage>(method: string, schema: Desc, init: MessageInitShape<Desc>): Promise<Session> {
    return unaryCall(this._wire!, `agentsessions.v1.Sessions/${method}`, method, encodeBinary(schema, create(schema, init)), SessionSchema);
  }

  /** Every session of a project, newest first, walking all pages. */
  async *list(o: { project?: string; pageSize?: number } = {}): AsyncGenerator<Session> {
    let pageToken = "";
    do {
      const req = { project: o.project ?? "", pageSize: o.pageSize ?? 0, pageToken };
      const page =
        this._wire && !this._httpGet
          ? await unaryCall(
              this._wire,
              "agentsessions.v1.Sessions/ListSessions",
              "ListSessions",
              encodeBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, req)),
              ListSessionsResponseSchema,
            )
          : await this.raw.listSessions(req);
      yield* page.sessions;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  }

  /**
   * Resume: re-drives the latest execution if it never ended, then journals LIFECYCLE(RESUME).
   * The stream of a re-drive is not returned here; an inputless `exec` on the session shows it.
   */
  resume(uid: string): Promise<Session> {
    if (this._wire) return this._sessionCall("Resume", ResumeRequestSchema, { session: uid });
    return this.raw.resume({ session: uid });
  }

  /**
   * Approve (§4.11): commits only the decision (an APPROVAL_RESULT record) on a parked tool call.
   * The session stays AWAITING until a Resume, or an inputless `exec`, runs the call (approved) or
   * journals an APPROVAL_DENIED receipt (denied) and finishes the turn. An exact retry returns the
   * original decision record without writing; a retry that changes the decision or reason is
   * FAILED_PRECONDITION.
   */
  approve(uid: string, o: ApproveOptions): Promise<ApproveResponse> {
    return this.raw.approve({
      session: uid,
      executionId: o.executionId,
      toolCallId: o.toolCallId,
      requestSeq: o.requestSeq,
      approved: o.approved,
      reason: o.reason ?? "",
      identity: o.identity,
    });
  }

  /**
   * Fork (docs/behaviour.md §4.7): children whose journals are the parent's records 1..at verbatim plus
   * a LIFECYCLE(FORK, "parent@<at>") marker; all children or none. The parent is untouched, unless
   * its harness keeps its state in memory: then the fork is at the head only, the parent is
   * checkpointed (a SUSPEND) and every child is a clone of its memory (docs/lifecycle.md).
   */
  async fork(uid: string, o: ForkOptions = {}): Promise<Session[]> {
    const r = await this.raw.fork({
      session: uid,
      atSeq: o.at ?? 0n,
      count: o.count ?? 0,
      labels: o.labels ?? {},
      childNames: o.names ?? [],
    });
    return r.children;
  }

  /** Suspend (§4.8): journals LIFECYCLE(SUSPEND) and leaves the session COLD; ABORTED while a turn runs. */
  suspend(uid: string): Promise<Session> {
    if (this._wire) return this._sessionCall("Suspend", SuspendRequestSchema, { session: uid });
    return this.raw.suspend({ session: uid });
  }

  /**
   * Cancel: stops the running execution (it journals END{CANCELED} and LIFECYCLE(CANCEL), and its
   * Exec stream ends CANCELED), or closes an interrupted one. Nothing to cancel: FAILED_PRECONDITION.
   */
  cancel(uid: string, o: CancelOptions = {}): Promise<Session> {
    const req = { session: uid, executionId: o.executionId ?? "", reason: o.reason ?? "" };
    if (this._wire) return this._sessionCall("Cancel", CancelRequestSchema, req);
    return this.raw.cancel(req);
  }

  /**
   * DeleteSession: erases the session and returns its final state. Afterwards the uid is NOT_FOUND
   * (Audit.Verify names the final head); forked children survive.
   */
  delete(uid: string): Promise<Session> {
    if (this._wire) return this._sessionCall("DeleteSession", DeleteSessionRequestSchema, { uid });
    return this.raw.deleteSession({ uid });
  }

  /**
   * Audit.Verify: the server's own chain check, against the head its Directory anchored (so it can
   * see a truncated journal, which a client replaying records cannot), and with `replay` a re-run
   * of every completed execution from the journal. A caller that distrusts the server should still
   * recompute the chain itself (proto/verify.ts), as `agentctl verify` does.
   * @experimental Audit is this host's extension, not part of agentsessions.v1.
   */
  verify(uid: string, o: VerifyOptions = {}): Promise<VerifyResponse> {
    return this.rawAudit.verify({ session: uid, replay: o.replay ?? false }, { signal: o.signal });
  }

  /**
   * Retention.SetRetention: a project's policy (sessions idle longer than `days` are deleted by the
   * tenant Directory's alarm, except the `keepLatest` most recently active). `days: 0` clears it;
   * `dryRun` stores nothing and lists what the policy would delete now. Needs the admin role.
   * @experimental Retention is this host's extension, not part of agentsessions.v1.
   */
  setRetention(o: { project: string; days: number; keepLatest?: number; dryRun?: boolean }): Promise<SetRetentionResponse> {
    return this.rawRetention.setRetention({ policy: { project: o.project, days: o.days, keepLatest: o.keepLatest ?? 0 }, dryRun: o.dryRun ?? false });
  }

  /** Retention.GetRetention: a project's policy, how many sessions it deleted, when the alarm last swept. @experimental */
  getRetention(project: string): Promise<RetentionStatus> {
    return this.rawRetention.getRetention({ project });
  }

  /**
   * Runs one turn and reads its stream to completion. With no inputs on an existing session it
   * recovers a turn that never ended (streaming the re-driven records), or else runs a turn with
   * input_count 0.
   */
  async exec(o: ExecOptions): Promise<ExecResult> {
    const records: LogRecord[] = [];
    const deltas: Delta[] = [];
    let first: Session | undefined;
    let last: Session | undefined;
    // What a re-attach needs: the execution, the last record seen, the delta text shown since it.
    let executionId = "";
    let ended = false;
    let parked = false;
    let shown = 0;
    const onRecord = (r: LogRecord) => {
      records.push(r);
      shown = 0;
      const ev = r.event;
      if (ev?.kind === EventKind.EVENT_EXECUTION_START && !executionId) executionId = ev.executionId;
      if (ev && ev.executionId === executionId && (ev.kind === EventKind.EVENT_END || ev.kind === EventKind.EVENT_ERROR)) ended = true;
      // A turn parked on an approval ends its stream with the SUSPEND that checkpoints it.
      if (ev?.kind === EventKind.EVENT_LIFECYCLE && executionId && ev.body.case === "lifecycle" && ev.body.value.kind === Lifecycle_Kind.LIFECYCLE_SUSPEND) {
        ended = true;
        parked = true;
      }
      o.onRecord?.(r);
    };
    const onDelta = (d: Delta) => {
      deltas.push(d);
      shown += d.chunk.length;
      o.onDelta?.(d);
    };
    const request = create(ExecRequestSchema, {
      session: o.session ?? "",
      inputs: (o.inputs ?? []).map((i) => (typeof i === "string" ? userText(i) : create(MessageSchema, i))),
      harness: o.harness ?? "",
      config: o.config ?? new Uint8Array(),
      resumeFromSeq: o.resumeFromSeq ?? 0n,
      expectedLastSeq: o.expectedLastSeq,
      deadlineUnix: o.deadlineUnix ?? 0n,
    });
    // Binary: read off the wire with the compiled decoder (sdk/server-stream.ts); JSON: connect-es.
    const stream = this._wire ? execUpdates(this._wire, request, o.signal) : this.raw.exec(request, { signal: o.signal });
    try {
      for await (const u of stream) {
        switch (u.update.case) {
          case "session":
            if (first) last = u.update.value;
            else first = u.update.value;
            o.onSession?.(u.update.value);
            break;
          case "record":
            onRecord(u.update.value);
            break;
          case "delta":
            onDelta(u.update.value);
            break;
        }
      }
    } catch (e) {
      // Only a dropped connection of a turn that is running is re-attached; the host's own errors stand.
      const err = ConnectError.from(e);
      const dropped = err.code === Code.Unavailable || err.code === Code.Unknown;
      const uid = first?.metadata?.uid;
      if (!dropped || o.reattach === false || o.signal?.aborted || !uid || !executionId || ended) throw err;
      const from = records[records.length - 1]!.seq + 1n;
      o.onReattach?.(from, `${Code[err.code]}: ${err.rawMessage}`);
      const afterSeq = from - 1n;
      // A turn that died with its host never ends by itself: once the host answers again and says
      // nothing runs, the records it did commit are read and the caller is told to Resume.
      const running = await this._turnRuns(uid, o.signal);
      for await (const ev of this.tail(uid, { fromSeq: from, follow: running, signal: o.signal, shown: { afterSeq, length: shown } })) {
        if (ev.kind === "record") onRecord(ev.record);
        else onDelta(create(DeltaSchema, { executionId: ev.delta.executionId, chunk: ev.delta.chunk, done: ev.delta.done }));
        if (ended) break;
      }
      if (!ended && !running) {
        throw new ConnectError(
          `the turn's stream dropped and the turn no longer runs on the host (it was interrupted, e.g. by a restart): Resume session ${uid} to recover it`,
          Code.Unavailable,
        );
      }
      if (!ended) throw new ConnectError("the turn's stream dropped and its end could not be followed: read the session and Replay", Code.Unavailable);
      // The final session frame a parked turn's Exec would have sent: its pending approval.
      if (parked) {
        last = await this.get(uid);
        o.onSession?.(last);
      }
    }
    if (!first) throw new ConnectError("the Exec stream ended without a session frame", Code.Internal);
    const outputs = records
      .filter((r) => r.event?.kind === EventKind.EVENT_OUTPUT)
      .map((r) => textOf(r.event?.body.case === "message" ? r.event.body.value : undefined));
    const cursor = last?.lastSeq ?? records[records.length - 1]?.seq ?? first.lastSeq;
    return { session: first, finalSession: last, records, deltas, outputs, cursor };
  }

  /** Whether a turn still runs (or waits on an approval) in `uid`, asking until the host answers. */
  private async _turnRuns(uid: string, signal?: AbortSignal): Promise<boolean> {
    for (let wait = 250; ; wait = Math.min(wait * 2, 5000)) {
      try {
        const s = await this.get(uid);
        return s.execState === ExecState.EXEC_RUNNING || s.execState === ExecState.EXEC_AWAITING;
      } catch (e) {
        if (ConnectError.from(e).code !== Code.Unavailable || signal?.aborted) throw e;
        await new Promise((ok) => setTimeout(ok, wait));
      }
    }
  }

  /**
   * Blobs.GetBlob, chunk by chunk (docs/blobs.md): for writing a large blob somewhere without
   * holding it whole. The caller checks the digest (getBlob does).
   * @experimental Blobs is this host's extension, not part of agentsessions.v1.
   */
  async *blobChunks(session: string, sha256: string, o: { signal?: AbortSignal } = {}): AsyncIterable<Uint8Array> {
    for await (const c of this.rawBlobs.getBlob({ session, sha256 }, { signal: o.signal })) yield c.data;
  }

  /**
   * One blob the session's journal references, whole, checked: its SHA-256 must be `sha256`
   * (hex, or "sha256:hex"), else DATA_LOSS. NOT_FOUND for a digest the session does not reference.
   * @experimental Blobs is this host's extension, not part of agentsessions.v1.
   */
  async getBlob(session: string, sha256: string, o: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
    const want = parseSha256(sha256);
    if (!want) throw new ConnectError("sha256 must be 64 lowercase hex characters, optionally prefixed sha256:", Code.InvalidArgument);
    const chunks: Uint8Array[] = [];
    let total = -1;
    let length = 0;
    for await (const c of this.rawBlobs.getBlob({ session, sha256: want }, { signal: o.signal })) {
      if (total < 0) total = Number(c.totalBytes);
      chunks.push(c.data);
      length += c.data.length;
    }
    if (total >= 0 && length !== total) throw new ConnectError(`blob sha256:${want} arrived with ${length} of its ${total} bytes`, Code.DataLoss);
    const data = concatBytes(chunks);
    const got = await sha256Bytes(data);
    if (got !== want) throw new ConnectError(`blob sha256:${want} arrived with SHA-256 ${got}: it was changed in storage or on the way`, Code.DataLoss);
    return data;
  }

  /**
   * The records with every blob reference replaced by the part it stands for, each blob fetched
   * once and checked against its digest and length (a mismatch is DATA_LOSS). For reading: a
   * resolved record's content_hash covers the reference, so verify the records as they came.
   * @experimental
   */
  async resolveRecords(session: string, records: readonly LogRecord[], o: { signal?: AbortSignal } = {}): Promise<LogRecord[]> {
    const cache = new Map<string, Promise<Uint8Array>>();
    const fetch = (ref: BlobReference) => {
      let p = cache.get(ref.sha256);
      if (!p) cache.set(ref.sha256, (p = this.getBlob(session, ref.sha256, o)));
      return p;
    };
    const out: LogRecord[] = [];
    for (const r of records) {
      if (!r.event || blobRefsOf(r.event).length === 0) {
        out.push(r);
        continue;
      }
      try {
        out.push({ ...r, event: await resolveEvent(r.event, fetch, sha256Bytes) });
      } catch (e) {
        if (e instanceof BlobMismatchError) throw new ConnectError(`record ${r.seq}: ${e.message}`, Code.DataLoss);
        throw e;
      }
    }
    return out;
  }

  /**
   * Follows a session (Tail, docs/follow.md): the committed records from `fromSeq`, then each
   * record as it commits and the running turn's deltas, for as long as the caller iterates (or up
   * to the head with `follow: false`). Reconnects by itself from the seq after the last record it
   * delivered, with backoff; nothing is delivered twice.
   * @experimental Tail is this host's extension, not part of agentsessions.v1.
   */
  tail(session: string, o: TailOptions = {}): AsyncGenerator<TailEvent> {
    const wire = this._wire;
    return tailSession(wire ? (req, signal) => tailResponses(wire, req, signal) : (req, signal) => this.rawTail.tail(req, { signal }), session, o);
  }

  /** Committed records with from <= seq <= to (to = 0: head), verbatim. */
  replay(session: string, o: { from?: bigint; to?: bigint; signal?: AbortSignal } = {}): AsyncIterable<LogRecord> {
    const req = { session, fromSeq: o.from ?? 0n, toSeq: o.to ?? 0n };
    // Binary: read off the wire with the compiled decoder (sdk/server-stream.ts); JSON: connect-es.
    return this._wire ? replayRecords(this._wire, req, o.signal) : this.raw.replay(req, { signal: o.signal });
  }

  /**
   * The same records in their binary encoding, a batch at a time, for a reader that takes them
   * apart itself (`agentctl verify`). Over JSON each record is decoded and encoded again.
   */
  replayEncoded(session: string, o: { from?: bigint; to?: bigint; signal?: AbortSignal } = {}): AsyncIterable<Uint8Array[]> {
    const req = { session, fromSeq: o.from ?? 0n, toSeq: o.to ?? 0n };
    return this._wire ? replayEncoded(this._wire, req, o.signal) : encodedBatches(this.raw.replay(req, { signal: o.signal }));
  }
}

async function* encodedBatches(records: AsyncIterable<LogRecord>): AsyncGenerator<Uint8Array[]> {
  for await (const r of records) yield [encodeBinary(LogRecordSchema, r)];
}

/** Lowercase hex SHA-256 with WebCrypto (Node 20, browsers, Workers alike). */
export async function sha256Bytes(data: Uint8Array): Promise<string> {
  return hexOf(new Uint8Array(await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>)));
}

export function createSessionsClient(opts: ClientOptions = {}): SessionsClient {
  return new SessionsClient(opts);
}

/** One line for a person: the code, the server's message, and a hint for transport failures. */
export function describeError(e: unknown, server = DEFAULT_SERVER): string {
  const err = ConnectError.from(e);
  if (err.code === Code.Unauthenticated) {
    const hint = err.rawMessage.includes("AGENTSESSIONS_TOKEN") ? "" : " (pass --token or set AGENTSESSIONS_TOKEN)";
    return `unauthenticated: ${err.rawMessage}${hint}`;
  }
  if (err.code === Code.PermissionDenied) return `permission denied: ${err.rawMessage}`;
  if (err.code === Code.Unavailable || err.code === Code.Unknown || err.code === Code.Internal) {
    const cause = err.cause instanceof Error ? err.cause.message : "";
    if (/fetch failed|ECONNREFUSED|ENOTFOUND/.test(`${err.rawMessage} ${cause}`)) {
      return `cannot reach ${server}: is the server running? (npm start, or pass --server)`;
    }
  }
  return `${codeName(err.code)}: ${err.rawMessage}`;
}

export function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}
