/**
 * Starts a real `wrangler dev` (workerd with SQLite storage on disk) on free loopback ports, for
 * integration tests, the conformance run and the benchmarks. The process runs in its own process
 * group so stop() and kill() take wrangler and both workerd children down together (PLATFORM.md P9).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync, closeSync } from "node:fs";
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
}

export interface DevServer {
  url: string;
  port: number;
  persistDir: string;
  logFile: string;
  /** Graceful stop (SIGTERM to the whole group), waits for exit. */
  stop(): Promise<void>;
  /** Hard kill (SIGKILL to the whole group): the crash a fault test needs. */
  kill(): Promise<void>;
  /** Starts again on the same port and storage. */
  restart(): Promise<void>;
}

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
  const persistDir = opts.persistDir ?? mkdtempSync(join(tmpdir(), "agentsessions-dev-"));
  const port = opts.port ?? (await freePort());
  const logFile = join(persistDir, `wrangler-${port}.log`);
  let child: ChildProcess | undefined;

  const launch = async () => {
    const inspector = await freePort();
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
    for (const [k, v] of Object.entries({ PUBLIC_URL: `http://127.0.0.1:${port}`, AUTH_MODE: "none", ...opts.vars })) args.push("--var", `${k}:${v}`);
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
        ...opts.env,
      },
    });
    closeSync(fd);
    await waitReady(`http://127.0.0.1:${port}`, child, logFile);
  };

  const signalGroup = async (sig: NodeJS.Signals) => {
    const c = child;
    if (!c || c.exitCode !== null || c.pid === undefined) return;
    const exited = new Promise<void>((ok) => c.once("exit", () => ok()));
    try {
      process.kill(-c.pid, sig);
    } catch {
      return;
    }
    await Promise.race([exited, sleep(10_000)]);
    // workerd children are reaped shortly after wrangler exits; make sure none survive.
    try {
      process.kill(-c.pid, "SIGKILL");
    } catch {
      // already gone
    }
    await sleep(200);
  };

  await launch();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    persistDir,
    logFile,
    stop: () => signalGroup("SIGTERM"),
    kill: () => signalGroup("SIGKILL"),
    restart: launch,
  };
}

async function waitReady(url: string, child: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}; see ${logFile}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`wrangler dev did not become ready within 60 s; see ${logFile}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((ok) => setTimeout(ok, ms));
}
