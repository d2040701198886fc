/**
 * Starts a real `wrangler dev` (workerd with SQLite storage on disk) on free loopback ports, for
 * integration tests, the conformance run and the benchmarks. The process runs in its own process
 * group so stop() and kill() take wrangler and both workerd children down together (docs/platform.md P9).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export interface DevServerOptions {
  /** Storage directory (kept across restarts); a fresh temp dir by default. */
  persistDir?: string;
  /** Worker vars (`--var K:V`). */
  vars?: Record<string, string>;
  /** Extra environment for the wrangler process. */
  env?: Record<string, string>;
  port?: number;
  /**
   * Let wrangler attach its devtools inspector to workerd (a CPU profiler needs it; the port is
   * `DevServer.inspectorPort`). Off by default: see `WITHOUT_DEVTOOLS`.
   */
  inspector?: boolean;
}

export interface DevServer {
  url: string;
  port: number;
  /** The port wrangler was given for its devtools inspector; it answers only with `inspector` set. */
  inspectorPort: number;
  persistDir: string;
  logFile: string;
  /** Graceful stop (SIGTERM to the whole group), waits for exit. */
  stop(): Promise<void>;
  /** Hard kill (SIGKILL to the whole group): the crash a fault test needs. */
  kill(): Promise<void>;
  /** Stops the running server (if it still runs), then starts again on the same port and storage. */
  restart(): Promise<void>;
  /** Stops the server and removes its storage directory when this module created it. */
  dispose(): Promise<void>;
}

/**
 * Where servers keep storage they own: under AGENTSESSIONS_TMP when a test run set it (the node
 * project's global setup does, and fails the run if anything is left there), else the temp dir.
 */
function tempRoot(): string {
  const root = process.env.AGENTSESSIONS_TMP;
  if (!root) return tmpdir();
  mkdirSync(root, { recursive: true });
  return root;
}

/**
 * The environment that keeps wrangler 4.86's devtools proxy from attaching to workerd. Attached,
 * it receives every console line a second time over the inspector protocol and handles it in
 * wrangler's Node process, about 1 ms of CPU a line on these machines, which a 2-core machine
 * takes from workerd (docs/performance.md, "Eighth round"). Console lines still reach wrangler's
 * output through workerd's structured logs. wrangler and miniflare read this variable as "a
 * debugger is attached in a VS Code terminal" and only test that it is set.
 */
export const WITHOUT_DEVTOOLS: Record<string, string> = { VSCODE_INSPECTOR_OPTIONS: "{}" };

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => ok(port));
    });
  });
}

export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const owned = opts.persistDir === undefined;
  const persistDir = opts.persistDir ?? mkdtempSync(join(tempRoot(), "agentsessions-dev-"));
  let port = opts.port ?? (await freePort());
  let logFile = join(persistDir, `wrangler-${port}.log`);
  let child: ChildProcess | undefined;
  let inspectorPort = 0;

  const launchOnce = async () => {
    const inspector = await freePort();
    inspectorPort = inspector;
    const args = [
      join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
      "dev",
      "-c",
      join(ROOT, "wrangler.toml"),
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspector),
      "--persist-to",
      persistDir,
      "--show-interactive-dev-session=false",
      "--log-level",
      "warn",
    ];
    // Runtime backends' incarnations dial back to this URL (objects/tunnel/served-harness.ts).
    // Local development: authentication off unless a test configures it (opts.vars.AUTH_MODE).
    // LOG_LEVEL as wrangler's --log-level above: a line below warn would never be shown, yet
    // wrangler's Node process would still take each into its debug log (docs/platform.md P18).
    for (const [k, v] of Object.entries({ PUBLIC_URL: `http://127.0.0.1:${port}`, AUTH_MODE: "none", LOG_LEVEL: "warn", ...opts.vars })) {
      args.push("--var", `${k}:${v}`);
    }
    mkdirSync(join(persistDir, "tmp"), { recursive: true });
    const logFrom = existsSync(logFile) ? statSync(logFile).size : 0;
    const fd = openSync(logFile, "a");
    child = spawn(process.execPath, args, {
      cwd: ROOT,
      detached: true,
      stdio: ["ignore", fd, fd],
      env: {
        ...process.env,
        WRANGLER_SEND_METRICS: "false",
        CI: "true",
        NO_COLOR: "1",
        CLOUDFLARE_CF_FETCH_ENABLED: "false",
        WRANGLER_LOG_PATH: join(persistDir, "wrangler-logs"),
        // wrangler's scratch files (its update check) stay with the server's own storage.
        TMPDIR: join(persistDir, "tmp"),
        ...(opts.inspector ? {} : WITHOUT_DEVTOOLS),
        ...opts.env,
      },
    });
    closeSync(fd);
    if (child.pid !== undefined) noteGroup(child.pid);
    await waitReady(`http://127.0.0.1:${port}`, child, logFile, logFrom);
  };

  /**
   * Starts wrangler, trying again when it exits before serving: a port picked by freePort() can be
   * taken by another process before wrangler binds it. A first start picks fresh ports for the next
   * try; a restart keeps its port (clients hold the URL) and waits for the old server to let go.
   */
  const launch = async (keepPort: boolean) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await launchOnce();
      } catch (e) {
        if (!(e instanceof EarlyExit) || attempt >= LAUNCH_ATTEMPTS) throw e;
        await signalGroup("SIGKILL");
        if (!keepPort && opts.port === undefined) {
          port = await freePort();
          logFile = join(persistDir, `wrangler-${port}.log`);
        }
        await sleep(500 * attempt);
      }
    }
  };

  const signalGroup = async (sig: NodeJS.Signals) => {
    const c = child;
    if (!c || c.pid === undefined) return;
    const group = c.pid;
    if (c.exitCode === null && c.signalCode === null) {
      const exited = new Promise<void>((ok) => c.once("exit", () => ok()));
      try {
        process.kill(-group, sig);
      } catch {
        // already gone
      }
      await Promise.race([exited, sleep(10_000)]);
    }
    // workerd children can outlive wrangler; whatever is left of the group goes now.
    try {
      process.kill(-group, "SIGKILL");
    } catch {
      // already gone
    }
    for (let i = 0; i < 50 && groupAlive(group); i++) await sleep(100);
    forgetGroup(group);
  };

  try {
    await launch(false);
  } catch (e) {
    await signalGroup("SIGKILL");
    if (owned) rmSync(persistDir, { recursive: true, force: true });
    throw e;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get inspectorPort() {
      return inspectorPort;
    },
    persistDir,
    logFile,
    stop: () => signalGroup("SIGTERM"),
    kill: () => signalGroup("SIGKILL"),
    restart: async () => {
      // The old server would keep the port, and the new one would never serve a request.
      await signalGroup("SIGTERM");
      await launch(true);
    },
    dispose: async () => {
      await signalGroup("SIGTERM");
      if (owned) rmSync(persistDir, { recursive: true, force: true });
    },
  };
}

const LAUNCH_ATTEMPTS = 3;

/** wrangler exited before it served a request; the message carries the end of its log. */
class EarlyExit extends Error {}

async function waitReady(url: string, child: ChildProcess, logFile: string, logFrom: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    // The log goes with a storage folder this module owns, so the error carries its end.
    if (child.exitCode !== null) throw new EarlyExit(`wrangler dev exited with ${child.exitCode} before serving; its log ends:\n${logTail(logFile, logFrom)}`);
    try {
      const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`wrangler dev did not become ready within 60 s; see ${logFile}`);
}

/** The last lines this launch wrote to the log, without terminal colours. */
function logTail(logFile: string, from: number): string {
  try {
    const text = readFileSync(logFile).subarray(from).toString("utf8");
    const plain = text.replace(/\x1b\[[0-9;]*m/g, "").trim();
    return plain.split("\n").slice(-20).join("\n") || "(empty)";
  } catch {
    return "(no log)";
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((ok) => setTimeout(ok, ms));
}

/**
 * Process groups this run started, one empty file per group under AGENTSESSIONS_TMP/.groups: the
 * test run's leak check (test/node/support/leak-check.ts) fails when one is still alive at its end.
 */
export const GROUPS_DIR = ".groups";

function noteGroup(group: number): void {
  const root = process.env.AGENTSESSIONS_TMP;
  if (!root) return;
  mkdirSync(join(root, GROUPS_DIR), { recursive: true });
  writeFileSync(join(root, GROUPS_DIR, String(group)), "");
}

function forgetGroup(group: number): void {
  const root = process.env.AGENTSESSIONS_TMP;
  if (root) rmSync(join(root, GROUPS_DIR, String(group)), { force: true });
}

/** Whether any process of the group still runs (zombies waiting to be reaped do not count). */
export function groupAlive(group: number): boolean {
  let out: string;
  try {
    out = execFileSync("ps", ["-eo", "pgid=,stat="], { encoding: "utf8" });
  } catch {
    return false;
  }
  return out.split("\n").some((line) => {
    const [g, stat] = line.trim().split(/\s+/);
    return Number(g) === group && stat !== undefined && !stat.startsWith("Z");
  });
}
