/**
 * One incarnation process, seen from the pod: spawned as
 * `node --import tsx runtimes/pod/incarnation.ts <module> <name>` with the dialback in its
 * environment, it reports over IPC when the host has welcomed it. The pod pauses it with SIGSTOP,
 * resumes it with SIGCONT, and ends it with SIGTERM, then SIGKILL after a grace period. Its stdout
 * and stderr become log lines of the pod (the token is removed from its environment before the
 * harness module loads, so harness code cannot print it by accident).
 * @internal Used by incarnations.ts; tested through the pod in test/node/pod/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Code, ConnectError } from "@connectrpc/connect";
import { ENV_SESSION, ENV_TUNNEL_TOKEN, ENV_TUNNEL_URL, isChildMessage } from "./child-messages.js";
import type { RuntimeLog } from "../node/runtime-log.js";

const ENTRY = fileURLToPath(new URL("./incarnation.ts", import.meta.url));
/** tsx's loader, resolved from this package so the child needs no particular working directory. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
/** A harness's log line longer than this is cut (a log is not a data channel). */
const MAX_LINE = 2_000;

export interface SpawnOptions {
  sessionUid: string;
  /** Absolute path of the harness module. */
  modulePath: string;
  /** The name the harness serves under (the tunnel's `name`). */
  name: string;
  dialback: { tunnelUrl: string; token: string };
  log: RuntimeLog;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class HarnessProcess {
  readonly pid: number;
  readonly exited: Promise<Exit>;
  private readonly _child: ChildProcess;
  private _exit: Exit | undefined;
  private _ended: { reason: string; code: string } | undefined;
  private _connected = false;
  private _waiters: (() => void)[] = [];

  constructor(o: SpawnOptions) {
    this._child = spawn(process.execPath, ["--import", TSX_LOADER, ENTRY, o.modulePath, o.name], {
      env: { ...process.env, [ENV_TUNNEL_URL]: o.dialback.tunnelUrl, [ENV_TUNNEL_TOKEN]: o.dialback.token, [ENV_SESSION]: o.sessionUid },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const child = this._child;
    child.on("error", (e) => o.log({ level: "error", msg: "incarnation error", session: o.sessionUid, pid: child.pid, error: e.message }));
    if (child.pid === undefined) {
      // spawn failed synchronously enough to have no pid; the 'error' event carries why.
      throw new ConnectError("cannot start an incarnation process", Code.Internal);
    }
    this.pid = child.pid;
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this._exit = { code, signal };
        this._wake();
        resolve(this._exit);
      });
    });
    child.on("message", (m) => {
      if (!isChildMessage(m)) return;
      if (m.kind === "connected") this._connected = true;
      else this._ended = { reason: m.reason, code: m.code };
      this._wake();
    });
    for (const [stream, readable] of [
      ["stdout", child.stdout],
      ["stderr", child.stderr],
    ] as const) {
      if (!readable) continue;
      createInterface({ input: readable, crlfDelay: Infinity }).on("line", (line) =>
        o.log({ level: "info", msg: "incarnation output", session: o.sessionUid, pid: this.pid, stream, line: line.slice(0, MAX_LINE) }),
      );
    }
  }

  get alive(): boolean {
    return this._exit === undefined;
  }

  /**
   * Resolves once the host has welcomed the harness. Rejects if the process ends first
   * (FAILED_PRECONDITION: a refused token or a broken module; a retry with the same dialback
   * cannot help) or after `ms` (UNAVAILABLE: the tunnel may be unreachable).
   */
  async ready(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (this._connected) return;
      if (this._ended || this._exit) {
        const why = this._ended?.reason ?? `it exited (${this._exit?.signal ?? `code ${this._exit?.code}`})`;
        const code = this._ended?.code === "unavailable" ? Code.Unavailable : Code.FailedPrecondition;
        throw new ConnectError(`the harness process could not dial back: ${why}`, code);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new ConnectError(`the harness process did not dial back within ${Math.round(ms / 1000)} s`, Code.Unavailable);
      await new Promise<void>((wake) => {
        const t = setTimeout(wake, left);
        this._waiters.push(() => (clearTimeout(t), wake()));
      });
    }
  }

  pause(): void {
    this._signal("SIGSTOP");
  }

  resume(): void {
    this._signal("SIGCONT");
  }

  /** SIGTERM (the harness says Goodbye and drains), SIGKILL after `graceMs`; resolves on exit. */
  async terminate(graceMs: number): Promise<Exit> {
    if (this._exit) return this._exit;
    this._signal("SIGTERM");
    // A paused process only acts on SIGTERM once it runs again.
    this._signal("SIGCONT");
    const t = setTimeout(() => this._signal("SIGKILL"), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(t);
    }
  }

  /** For process exit: no waiting possible. */
  killNow(): void {
    this._signal("SIGKILL");
  }

  private _signal(sig: NodeJS.Signals): void {
    if (this._exit) return;
    try {
      this._child.kill(sig);
    } catch {
      // Already gone (ESRCH): the exit event follows.
    }
  }

  private _wake(): void {
    for (const w of this._waiters.splice(0)) w();
  }
}
