/**
 * `npm run pod -- --port 9400 --harness counter=examples/harnesses/counter.ts [--harness …]`
 *
 * Serves the Runtime service (docs/runtimes.md) for the given harness modules: each session the
 * host places here runs in its own child process that dials back over the host's tunnel. Logs one
 * JSON line per RPC on stdout. SIGINT or SIGTERM stops every incarnation, then exits 0. With a
 * token (AGENTSESSIONS_RUNTIME_TOKEN, or --token) every request must carry it; without one it
 * listens only on a loopback address.
 */
import { parseArgs } from "node:util";
import { RUNTIME_TOKEN_ENV, resolveToken } from "../node/bearer-token.js";
import { integerFlag } from "../node/flags.js";
import { loadHarnessModules, parseHarnessFlag } from "../node/harness-modules.js";
import { stdoutLog } from "../node/runtime-log.js";
import { startPodServer } from "./pod-server.js";

const USAGE = `usage: npm run pod -- --harness NAME=MODULE [--harness …] [--port 9400] [--host 127.0.0.1]
                   [--ready-timeout-ms 15000] [--stop-grace-ms 5000] [--token TOKEN]
       (prefer ${RUNTIME_TOKEN_ENV}=TOKEN to --token: a command line is visible to every local user)`;

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        harness: { type: "string", multiple: true },
        port: { type: "string", default: "9400" },
        host: { type: "string", default: "127.0.0.1" },
        "ready-timeout-ms": { type: "string", default: "15000" },
        "stop-grace-ms": { type: "string", default: "5000" },
        token: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let harnesses;
  let port: number, readyTimeoutMs: number, stopGraceMs: number, token: string | undefined;
  try {
    token = resolveToken(values.token, process.env, values.host);
    if (!values.harness?.length) throw new Error("at least one --harness NAME=MODULE is required");
    port = integerFlag("port", values.port, 0, 65_535);
    readyTimeoutMs = integerFlag("ready-timeout-ms", values["ready-timeout-ms"], 1, 600_000);
    stopGraceMs = integerFlag("stop-grace-ms", values["stop-grace-ms"], 0, 600_000);
    harnesses = await loadHarnessModules(values.harness.map((f) => parseHarnessFlag(f)));
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    return 2;
  }

  const server = await startPodServer({ harnesses, port, host: values.host, token, readyTimeoutMs, stopGraceMs, log: stdoutLog });
  // Never leave orphans: whatever ends this process takes its incarnations with it.
  process.once("exit", () => server.killAllNow());
  stdoutLog({
    level: "info",
    msg: "listening",
    url: server.url,
    harnesses: [...harnesses.keys()].sort(),
    authentication: token ? "bearer token" : "none (loopback only)",
  });

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  stdoutLog({ level: "info", msg: "shutting down", signal });
  await server.close();
  stdoutLog({ level: "info", msg: "stopped" });
  return 0;
}

process.exit(await main());
