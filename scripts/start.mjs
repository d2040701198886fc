#!/usr/bin/env node
// `npm start`: the API and the inspector UI on http://127.0.0.1:$PORT (default 8787), under
// `wrangler dev` with local durable storage in .wrangler/state (kept across restarts).
//
// Worker vars and secrets come from .dev.vars (see .dev.vars.example) and from the shell that runs
// npm start (MODEL_*, TOOL_*, AUTH_*, ... : the shell wins), so `MODEL_BASE_URL=… npm start` just
// works. None of them is ever put on a command line, where any local user could read it in `ps`:
// they go to wrangler in a private env file (mode 0600, in a 0700 folder) that is removed on exit.
// Authentication is off (AUTH_MODE=none, loopback only) unless .dev.vars or the shell sets
// AUTH_MODE; the first line says which. Stopping npm start (Ctrl-C, or SIGTERM to the npm process
// or to this one) stops wrangler and workerd with it.
//
// For tests and tools: AGENTSESSIONS_DEV_VARS names another .dev.vars file, AGENTSESSIONS_STATE
// another storage folder. Tested by test/node/scripts/start.test.ts.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { encodeEnvFile, parseDevVars } from "./dev-vars.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const port = process.env.PORT || "8787";
if (!/^\d{1,5}$/.test(port)) {
  console.error(`PORT must be a port number, got ${JSON.stringify(port)}`);
  process.exit(2);
}
const devVarsPath = process.env.AGENTSESSIONS_DEV_VARS || join(root, ".dev.vars");
const state = process.env.AGENTSESSIONS_STATE || join(root, ".wrangler/state");

// What the Worker reads (objects/config.ts), as far as the shell sets it.
const VAR_PREFIXES = [
  "MODEL_",
  "TOOL_",
  "APPROVAL_",
  "AUTH_",
  "HARNESS_",
  "MAX_",
  "RATE_LIMIT_",
  "CORS_",
  "RUNTIME_",
  "PUBLIC_URL",
  "OPENAI_API_KEY",
  "TEST_HARNESSES",
  "BENCH",
];
const fromShell = Object.fromEntries(Object.entries(process.env).filter(([k]) => VAR_PREFIXES.some((p) => k.startsWith(p))));
let fromFile = {};
try {
  if (existsSync(devVarsPath)) fromFile = parseDevVars(readFileSync(devVarsPath, "utf8"));
} catch (e) {
  console.error(`agentsessions: ${devVarsPath} does not parse: ${e.message}`);
  process.exit(2);
}
const defaults = { AUTH_MODE: "none", PUBLIC_URL: `http://127.0.0.1:${port}` };
const vars = { ...defaults, ...fromFile, ...fromShell };

let envFile;
let envText;
try {
  envText = encodeEnvFile(vars);
} catch (e) {
  console.error(`agentsessions: ${e.message}`);
  process.exit(2);
}
const envDir = mkdtempSync(join(tmpdir(), "agentsessions-start-"));
envFile = join(envDir, "worker.env");
writeFileSync(envFile, envText, { mode: 0o600 });
const cleanup = () => {
  if (envFile) rmSync(envDir, { recursive: true, force: true });
  envFile = undefined;
};

const args = [
  join(root, "node_modules/wrangler/bin/wrangler.js"),
  "dev",
  "-c",
  join(root, "wrangler.toml"),
  "--ip",
  "127.0.0.1",
  "--port",
  port,
  "--persist-to",
  state,
  "--show-interactive-dev-session=false",
  "--log-level",
  "log",
  // Replaces wrangler's own .dev.vars loading: the file above holds .dev.vars merged with the shell.
  "--env-file",
  envFile,
];

// Its own process group, so one signal stops wrangler and both workerd processes (docs/platform.md).
const child = spawn(process.execPath, args, {
  cwd: root,
  detached: true,
  stdio: ["ignore", "pipe", "pipe"],
  env: {
    ...process.env,
    WRANGLER_SEND_METRICS: "false",
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_LOG_PATH: join(root, ".wrangler/logs"),
  },
});

let stopping = false;
const stop = (sig) => {
  if (stopping) return;
  stopping = true;
  try {
    process.kill(-child.pid, sig);
  } catch {
    // already gone
  }
  // A wrangler that ignores the signal is killed outright.
  setTimeout(() => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // gone
    }
  }, 10_000).unref();
};
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, () => stop(sig));
// npm may end without passing its signal on: when this process is orphaned, stop with it.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) stop("SIGTERM");
}, 500).unref();
process.on("exit", () => {
  cleanup();
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // gone
  }
});
// A closed terminal or pipe must not crash this process before wrangler is stopped.
for (const s of [process.stdout, process.stderr]) s.on("error", () => stop("SIGTERM"));

const secrets = /KEY|TOKEN|SECRET|JWKS$/;
const noise = /^\[wrangler:info\] (GET|POST|PUT|DELETE|OPTIONS|HEAD) |^Using secrets defined in /;
for (const [from, to] of [
  [child.stdout, process.stdout],
  [child.stderr, process.stderr],
]) {
  createInterface({ input: from }).on("line", (line) => {
    if (noise.test(line)) return;
    if (line.includes("Ready on http://")) {
      // One write, so a reader that sees the first line sees the whole first screen with it.
      const source = fromShell.AUTH_MODE !== undefined ? "the shell" : fromFile.AUTH_MODE !== undefined ? devVarsPath : undefined;
      const screen = [
        `agentsessions: API and UI on http://127.0.0.1:${port}  (storage: ${state}; Ctrl-C stops)`,
        `agentsessions: ${authLine(vars.AUTH_MODE, source)}`,
      ];
      const named = Object.keys({ ...fromFile, ...fromShell }).sort();
      if (named.length)
        screen.push(`agentsessions: worker vars from .dev.vars and the shell: ${named.map((k) => (secrets.test(k) ? `${k} (secret)` : k)).join(", ")}`);
      to.write(`${screen.join("\n")}\n`);
      return;
    }
    to.write(line + "\n");
  });
}
child.on("exit", (code, signal) => {
  cleanup();
  process.exit(code ?? (signal ? 0 : 1));
});

function authLine(mode, source) {
  if (mode === "none") return "authentication is off (AUTH_MODE=none: loopback callers only); set AUTH_MODE in .dev.vars to turn it on (docs/security.md)";
  return `authentication: AUTH_MODE=${mode}${source ? ` (from ${source})` : ""}`;
}
