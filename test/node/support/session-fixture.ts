/**
 * In-process fixtures for session-level tests: a SessionHost on sql.js with a fake clock, a
 * recording Directory, erasure, and chosen harnesses; plus helpers to drain an Exec stream.
 */
import type { BlobStore } from "../../../objects/blobs/blob-store.js";
import { create, fromBinary } from "@bufbuild/protobuf";
import { EventKind, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessDescriptorSchema, Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ExecRequestSchema, ExecUpdateSchema, SessionSchema, type ExecUpdate } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../../../proto/ids.js";
import { textOf, userText } from "../../../proto/messages.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import { createModelInvoker, type ModelInvoker } from "../../../objects/controller/models.js";
import type { DirectoryRow } from "../../../objects/directory/directory-store.js";
import { FrameDecoder } from "../../../objects/exec-frames.js";
import type { Failure } from "../../../objects/session/outcomes.js";
import type { ExecutionLeases, SessionState } from "../../../objects/session/state.js";
import { SessionHost, type ExecStart, type SessionHostDeps } from "../../../objects/session/facade.js";
import type { Runtime } from "../../../runtimes/runtime-spi.js";
import type { ToolExecutor } from "../../../objects/controller/tools.js";
import { createTestDb, eraseTestDb } from "./sqljs-db.js";

export function descriptor(id: string, resumability = Resumability.STATELESS_REPLAY) {
  return create(HarnessDescriptorSchema, { id, version: "t1", capabilities: { resumability } });
}

/** A harness that waits for `release` before its model call. */
export function gatedHarness() {
  let release!: () => void;
  let running!: () => void;
  const gate = new Promise<void>((ok) => (release = ok));
  /** Resolves once Run has started (the turn's start marker and inputs are committed). */
  const started = new Promise<void>((ok) => (running = ok));
  const harness: Harness = {
    describe: () => descriptor("gated"),
    async run(start, sink) {
      running();
      await gate;
      await sink.model({ model: "echo", messages: [userText(textOf(start.inputs[0]))] });
    },
  };
  return { harness, release, started };
}

export interface SetupOptions {
  tools?: ToolExecutor;
  /** How long a turn runs before the Directory hears it is running (the host's default without). */
  runningReportMs?: number;
  /** How close two changes come to make a burst (objects/session/directory-reports.ts; the host's default without). */
  directoryBurstMs?: number;
  /** The tenant's count of running executions (none without: nothing is counted). */
  leases?: ExecutionLeases;
  approvalTimeoutSeconds?: number;
  /** The runtime the session places on (the built-in one by default). */
  runtime?: Runtime;
  /** Harnesses that are not built in (registered or tunnel ones), as SessionObject resolves them. */
  remote?: SessionHostDeps["remote"];
  /** The in-memory journal's budget (objects/session/session-cache.ts; the host's default without). */
  cacheMaxHeapBytes?: number;
  /** Where large parts go (docs/blobs.md; e.g. support/memory-blobs.ts); none without: parts stay inline. */
  blobs?: { store: BlobStore; maxInline: number };
}

/**
 * The journal cache budget sessions get unless a test sets one: test/node/session/over-budget.test.ts
 * sets SESSION_FIXTURE_CACHE_BYTES to run other files' tests on sessions whose journal is past it.
 */
function defaultCacheBudget(): number | undefined {
  const v = process.env.SESSION_FIXTURE_CACHE_BYTES;
  return v === undefined ? undefined : Number(v);
}

export function setup(extra: Record<string, Harness> = {}, models?: (sessionModel: string) => ModelInvoker, o: SetupOptions = {}) {
  const db = createTestDb();
  const reports: DirectoryRow[] = [];
  let clock = 1_700_000_000_000;
  /** The object's single alarm slot, as the session last set it. */
  const alarm: { at: number | null; sets: number } = { at: null, sets: 0 };
  /** Structured log lines the session wrote. */
  const logs: Record<string, unknown>[] = [];
  const harnesses = { echo: echoHarness, ...extra };
  const host = new SessionHost({
    db,
    now: () => clock,
    models: models ?? ((sessionModel) => createModelInvoker({ sessionModel })),
    directory: async (_tenant, row) => {
      reports.push(row);
    },
    harnesses: { get: (n) => harnesses[n as keyof typeof harnesses], names: () => Object.keys(harnesses) },
    erase: async () => eraseTestDb(db),
    tools: o.tools,
    runtime: o.runtime,
    remote: o.remote,
    runningReportMs: o.runningReportMs,
    directoryBurstMs: o.directoryBurstMs,
    leases: o.leases,
    approvalTimeoutSeconds: o.approvalTimeoutSeconds,
    cacheMaxHeapBytes: o.cacheMaxHeapBytes ?? defaultCacheBudget(),
    blobs: o.blobs && { ...o.blobs, own: async () => undefined },
    log: (line) => void logs.push(line),
    setAlarm: async (at) => {
      alarm.at = at;
      alarm.sets++;
    },
  });
  const tick = (ms: number) => (clock += ms);
  return { db, host, reports, tick, now: () => clock, alarm, logs };
}

export async function createSession(host: SessionHost, harness = "echo") {
  const uid = mintSessionUid();
  const r = await host.create({
    tenant: "default",
    uid,
    statics: create(SessionSchema, { metadata: { project: "default" }, harness }),
  });
  if (!r.ok) throw new Error(r.message);
  return uid;
}

export async function drain(started: ExecStart | Promise<ExecStart>): Promise<{ updates: ExecUpdate[]; failure?: Failure }> {
  const start = await started;
  if (!start.ok) return { updates: [], failure: start };
  const dec = new FrameDecoder();
  const updates: ExecUpdate[] = [];
  let failure: Failure | undefined;
  if (!("frames" in start)) throw new Error("a turn came back whole to a reader that did not ask");
  const reader = start.frames.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    for (const f of dec.push(value)) {
      if (f.kind === "failure") failure = f.failure;
      else if (f.kind === "update") updates.push(fromBinary(ExecUpdateSchema, f.bytes));
    }
  }
  return { updates, failure };
}

export const execReq = (init: Parameters<typeof create<typeof ExecRequestSchema>>[1]) => create(ExecRequestSchema, init);
export const kinds = (updates: ExecUpdate[]) => updates.flatMap((u) => (u.update.case === "record" ? [EventKind[u.update.value.event!.kind]] : []));

/** The session's current state, or a throw when it has none. */
export function sessionOf(host: SessionHost) {
  const s = host.get();
  if (!s.ok) throw new Error(s.message);
  return s.value;
}

/** The session core behind the facade: tests write the journals the API refuses to produce. */
export const stateOf = (host: SessionHost) => (host as unknown as { _s: SessionState })._s;

/** Appends records as another writer would, minting a fence; returns the last seq. */
export function inject(host: SessionHost, events: Event[]): bigint {
  const r = stateOf(host).append(events, { fence: 0n, mintFence: true });
  if (!r.ok) throw new Error(`inject: ${r.reason}`);
  return r.records[r.records.length - 1]!.seq;
}
