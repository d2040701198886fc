#!/usr/bin/env node
// `npm start`: the API and the inspector UI on http://127.0.0.1:$PORT (default 8787), under
// `wrangler dev` with local durable storage in .wrangler/state (kept across restarts).
//
// Worker vars come from the shell that runs npm start (or .dev.vars): every MODEL_* and
// TOOL_* variable set here is handed to the Worker, so `MODEL_BASE_URL=… npm start` just works.
// Secrets are passed to wrangler and never printed. Wrangler's own per-request lines are dropped:
// the Worker logs one structured line per RPC instead.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const port = process.env.PORT || "8787";
if (!/^\d{1,5}$/.test(port)) {
  console.error(`PORT must be a port number, got ${JSON.stringify(port)}`);
  process.exit(2);
}
const VAR_PREFIXES = ["MODEL_", "TOOL_", "APPROVAL_", "AUTH_", "HARNESS_", "PUBLIC_URL"];
const vars = Object.entries(process.env).filter(([k]) => VAR_PREFIXES.some((p) => k.startsWith(p)));

const args = [
  join(root, "node_modules/wrangler/bin/wrangler.js"),
  "dev",
  "--ip",
  "127.0.0.1",
  "--port",
  port,
  "--persist-to",
  join(root, ".wrangler/state"),
  "--show-interactive-dev-session=false",
  "--log-level",
  "log",
];
for (const [k, v] of vars) args.push("--var", `${k}:${v}`);
// Local development: authentication is off unless AUTH_MODE is set (docs/security.md).
if (!process.env.AUTH_MODE) args.push("--var", "AUTH_MODE:none");
// Runtime backends (npm run pod) dial back to this host's tunnel here.
if (!process.env.PUBLIC_URL) args.push("--var", `PUBLIC_URL:http://127.0.0.1:${port}`);

const child = spawn(process.execPath, args, {
  cwd: root,
  stdio: ["inherit", "pipe", "pipe"],
  env: {
    ...process.env,
    WRANGLER_SEND_METRICS: "false",
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_LOG_PATH: join(root, ".wrangler/logs"),
  },
});

const noise = /^\[wrangler:info\] (GET|POST|PUT|DELETE|OPTIONS|HEAD) /;
for (const [from, to] of [
  [child.stdout, process.stdout],
  [child.stderr, process.stderr],
]) {
  createInterface({ input: from }).on("line", (line) => {
    if (noise.test(line)) return;
    if (line.includes("Ready on http://")) {
      to.write(`agentsessions: API and UI on http://127.0.0.1:${port}  (storage: .wrangler/state; Ctrl-C stops)\n`);
      if (vars.length) to.write(`agentsessions: worker vars from the environment: ${vars.map(([k]) => k).join(", ")}\n`);
      return;
    }
    to.write(line + "\n");
  });
}
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
