/**
 * `npm run pod -- --port 9400 --harness counter=examples/harnesses/counter.ts [--harness …]`
 *
 * Serves the Runtime service (docs/runtimes.md) for the given harness modules: each session the
 * host places here runs in its own child process that dials back over the host's tunnel. Logs one
 * JSON line per RPC on stdout. SIGINT or SIGTERM stops every incarnation, then exits 0.
 */
import { parseArgs } from "node:util";
import { loadHarnessModules, parseHarnessFlag } from "./harness-modules.js";
import { stdoutLog } from "./pod-log.js";
import { startPodServer } from "./pod-server.js";

const USAGE = `usage: npm run pod -- --harness NAME=MODULE [--harness …] [--port 9400] [--host 127.0.0.1]
                   [--ready-timeout-ms 15000] [--stop-grace-ms 5000]`;

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
  let port: number, readyTimeoutMs: number, stopGraceMs: number;
  try {
    if (!values.harness?.length) throw new Error("at least one --harness NAME=MODULE is required");
    port = integerFlag("port", values.port, 0, 65_535);
    readyTimeoutMs = integerFlag("ready-timeout-ms", values["ready-timeout-ms"], 1, 600_000);
    stopGraceMs = integerFlag("stop-grace-ms", values["stop-grace-ms"], 0, 600_000);
    harnesses = await loadHarnessModules(values.harness.map((f) => parseHarnessFlag(f)));
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    return 2;
  }

  const server = await startPodServer({ harnesses, port, host: values.host, readyTimeoutMs, stopGraceMs, log: stdoutLog });
  // Never leave orphans: whatever ends this process takes its incarnations with it.
  process.once("exit", () => server.killAllNow());
  stdoutLog({ level: "info", msg: "listening", url: server.url, harnesses: [...harnesses.keys()].sort() });

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  stdoutLog({ level: "info", msg: "shutting down", signal });
  await server.close();
  stdoutLog({ level: "info", msg: "stopped" });
  return 0;
}

function integerFlag(name: string, v: string | undefined, min: number, max: number): number {
  const n = Number(v);
  if (!/^\d+$/.test(v ?? "") || n < min || n > max) throw new Error(`--${name} must be an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
  return n;
}

process.exit(await main());
