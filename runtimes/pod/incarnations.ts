/**
 * The pod's incarnations: at most one process per session, and the compute state the Runtime
 * service reports for it (docs/runtimes.md):
 *
 *   NONE        nothing here (never placed, or its process ended by itself: crashed, or its
 *               one-time connection was lost)
 *   LIVE        a process runs the session's harness (dialled back, or dialling)
 *   WARM        Snapshot(LOCAL): the process is paused with SIGSTOP; Restore or Create resume it
 *   COLD        Snapshot(EXTERNAL): the process was stopped; the journal brings the state back
 *   TERMINATED  Stop: the process was stopped and the session released
 *
 * Operations on one session run one at a time (two concurrent Creates start one process); different
 * sessions proceed in parallel. No memory is captured: a WARM process keeps its RAM only while the
 * pod runs, so capabilities say memory_snapshot=false and every ref has memory=false.
 * @internal Used by pod-service.ts; tested in test/node/pod/.
 */
import { hostname } from "node:os";
import { Code, ConnectError } from "@connectrpc/connect";
import { ComputeState } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { tunnelName } from "../node/dialback-serve.js";
import { createKeyedQueue } from "../node/keyed-queue.js";
import { HarnessProcess } from "./harness-process.js";
import type { HarnessModules } from "../node/harness-modules.js";
import type { RuntimeLog } from "../node/runtime-log.js";

export type Phase = "live" | "warm" | "cold" | "terminated";

interface Entry {
  uid: string;
  /** The pod's name of the harness ("" for a session only ever snapshotted here). */
  harness: string;
  phase: Phase;
  /** Set while live or warm. */
  proc?: HarnessProcess;
}

export interface Placed {
  id: string;
  worker: string;
}

export interface Dialback {
  tunnelUrl: string;
  token: string;
}

export interface IncarnationPoolOptions {
  modules: HarnessModules;
  log: RuntimeLog;
  /** How long Create, Restore and Fork wait for the harness to dial back. */
  readyTimeoutMs: number;
  /** Between SIGTERM and SIGKILL. */
  stopGraceMs: number;
}

export class IncarnationPool {
  private readonly _entries = new Map<string, Entry>();
  private readonly _queue = createKeyedQueue();
  private readonly _host = hostname();
  private _closed = false;

  constructor(private readonly _o: IncarnationPoolOptions) {}

  /** Starts the session's incarnation, or returns the running one (resuming it if paused). */
  place(uid: string, harness: string, dialback: Dialback | undefined): Promise<Placed> {
    if (!uid) throw invalid("a session uid is required");
    return this._serial(uid, async () => {
      const e = this._entries.get(uid);
      const name = harness || e?.harness || "";
      if (!name) throw invalid("spec.harness is required");
      const running = e && this._running(e);
      if (running) {
        if (name !== running.harness) {
          throw new ConnectError(`session ${uid} runs harness ${running.harness} here; stop it before placing ${name}`, Code.FailedPrecondition);
        }
        if (running.phase === "warm") this._resume(running);
        return this._placed(running);
      }
      return this._spawn(uid, name, dialback, e);
    });
  }

  /** LOCAL pauses (WARM), EXTERNAL stops (COLD). Both are idempotent. */
  snapshot(uid: string, kind: "LOCAL" | "EXTERNAL"): Promise<void> {
    if (!uid) throw invalid("incarnation.id is required");
    return this._serial(uid, async () => {
      const e = this._entries.get(uid);
      const running = e && this._running(e);
      if (kind === "LOCAL") {
        if (running?.phase === "live") {
          running.proc!.pause();
          running.phase = "warm";
          this._o.log({ level: "info", msg: "incarnation paused", session: uid, pid: running.proc!.pid });
        } else if (running?.phase !== "warm") {
          throw new ConnectError(`session ${uid} has no running incarnation to pause (${this.phaseName(uid)})`, Code.FailedPrecondition);
        }
        return;
      }
      if (running) {
        await this._end(running, "cold");
      } else if (e?.phase !== "terminated") {
        // Nothing runs (never placed here, or it ended): the journal is the snapshot either way.
        this._entries.set(uid, { uid, harness: e?.harness ?? "", phase: "cold" });
      }
    });
  }

  /** Destroys the incarnation. Idempotent; a session never placed here stays NONE. */
  stop(uid: string): Promise<void> {
    if (!uid) throw invalid("incarnation.id is required");
    return this._serial(uid, async () => {
      const e = this._entries.get(uid);
      if (!e) return;
      const running = this._running(e);
      if (running) await this._end(running, "terminated");
      else e.phase = "terminated";
    });
  }

  status(uid: string): ComputeState {
    const e = this._entries.get(uid);
    if (!e) return ComputeState.COMPUTE_NONE;
    if ((e.phase === "live" || e.phase === "warm") && !e.proc?.alive) return ComputeState.COMPUTE_NONE;
    return { live: ComputeState.COMPUTE_LIVE, warm: ComputeState.COMPUTE_WARM, cold: ComputeState.COMPUTE_COLD, terminated: ComputeState.COMPUTE_TERMINATED }[
      e.phase
    ];
  }

  /** The harness a session was placed with here, if any (Fork places the child with the parent's). */
  harnessOf(uid: string): string | undefined {
    return this._entries.get(uid)?.harness || undefined;
  }

  /** Graceful shutdown: refuse new placements, stop every process. */
  async close(graceMs = this._o.stopGraceMs): Promise<void> {
    this._closed = true;
    await Promise.all(
      [...this._entries.values()].map((e) => {
        const proc = e.proc;
        if (!proc?.alive) return undefined;
        e.proc = undefined;
        e.phase = "terminated";
        return proc.terminate(graceMs);
      }),
    );
  }

  /** Last resort at process exit, when nothing can be awaited. */
  killAllNow(): void {
    for (const e of this._entries.values()) e.proc?.killNow();
  }

  private phaseName(uid: string): string {
    return ComputeState[this.status(uid)];
  }

  /** The entry if its process is still running (live or paused). */
  private _running(e: Entry): Entry | undefined {
    return (e.phase === "live" || e.phase === "warm") && e.proc?.alive ? e : undefined;
  }

  private async _spawn(uid: string, harness: string, dialback: Dialback | undefined, previous: Entry | undefined): Promise<Placed> {
    if (this._closed) throw new ConnectError("the pod is shutting down", Code.Unavailable);
    const m = this._o.modules.get(harness);
    if (!m)
      throw new ConnectError(`harness ${JSON.stringify(harness)} is not hosted here (hosted: ${[...this._o.modules.keys()].sort().join(", ")})`, Code.NotFound);
    const db = checkDialback(dialback);
    const proc = new HarnessProcess({ sessionUid: uid, modulePath: m.path, name: tunnelName(db.tunnelUrl, harness), dialback: db, log: this._o.log });
    const entry: Entry = { uid, harness, phase: "live", proc };
    this._entries.set(uid, entry);
    this._o.log({ level: "info", msg: "incarnation started", session: uid, harness, pid: proc.pid });
    void proc.exited.then((x) => {
      const expected = entry.proc !== proc;
      this._o.log({ level: expected ? "info" : "warn", msg: "incarnation exited", session: uid, pid: proc.pid, code: x.code, signal: x.signal, expected });
    });
    try {
      await proc.ready(this._o.readyTimeoutMs);
    } catch (e) {
      entry.proc = undefined;
      await proc.terminate(this._o.stopGraceMs);
      if (previous) this._entries.set(uid, previous);
      else this._entries.delete(uid);
      throw e;
    }
    return this._placed(entry);
  }

  private _resume(e: Entry): void {
    e.proc!.resume();
    e.phase = "live";
    this._o.log({ level: "info", msg: "incarnation resumed", session: e.uid, pid: e.proc!.pid });
  }

  private async _end(e: Entry, phase: "cold" | "terminated"): Promise<void> {
    const proc = e.proc!;
    e.proc = undefined;
    e.phase = phase;
    await proc.terminate(this._o.stopGraceMs);
  }

  private _placed(e: Entry): Placed {
    return { id: e.uid, worker: `${this._host}/${e.proc!.pid}` };
  }

  private _serial<T>(uid: string, fn: () => Promise<T>): Promise<T> {
    return this._queue.run(uid, fn);
  }
}

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** The pod starts harnesses that dial back; without a dialback there is nothing to start. */
function checkDialback(d: Dialback | undefined): Dialback {
  if (!d?.tunnelUrl) throw invalid("a dialback (tunnel_url and token) is required: the pod's harnesses connect back to the host");
  let u: URL;
  try {
    u = new URL(d.tunnelUrl);
  } catch {
    throw invalid("dialback.tunnel_url is not a URL");
  }
  if (!["http:", "https:", "ws:", "wss:"].includes(u.protocol)) throw invalid("dialback.tunnel_url must be http(s) or ws(s)");
  return d;
}
