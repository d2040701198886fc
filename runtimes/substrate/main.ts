/**
 * `npm run substrate -- --ateapi URL --atespace NAME --template NAME --port N --harness NAME=MODULE`
 *
 * The substrate bridge (docs/runtimes.md "The substrate bridge"): serves the Runtime service for
 * the host over HTTP, and drives agent-substrate's control API over gRPC. Logs one JSON line per
 * RPC on stdout. SIGINT or SIGTERM stops serving and exits 0; actors are left as they are (they
 * hold the sessions' memory). Secrets come from the environment or files, never the log.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { RUNTIME_TOKEN_ENV, resolveToken } from "../node/bearer-token.js";
import { integerFlag } from "../node/flags.js";
import { stdoutLog } from "../node/runtime-log.js";
import { ATTACH_TOKEN_ENV } from "./agent/attach-agent.js";
import { loadHostedHarness } from "./hosted-harness.js";
import { startSubstrateServer } from "./substrate-server.js";

const USAGE = `usage: npm run substrate -- --ateapi URL --atespace NAME --template NAME --harness NAME=MODULE|DESCRIPTOR.json
                         [--port 9500] [--host 127.0.0.1] [--router URL] [--template-atespace NAME]
                         [--ateapi-token-file FILE] [--ateapi-ca FILE] [--token TOKEN]
                         [--ateapi-timeout-ms 120000] [--attach-timeout-ms 60000] [--fork-parallelism 4]
       ${RUNTIME_TOKEN_ENV}: the token the host must send (prefer it to --token: a command line is visible to every local user)
       ${ATTACH_TOKEN_ENV}: the token the actor agents require on Attach, if they do`;

const DEFAULT_ROUTER = "http://atenet-router.ate-system.svc";

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        ateapi: { type: "string" },
        atespace: { type: "string" },
        template: { type: "string" },
        "template-atespace": { type: "string" },
        harness: { type: "string" },
        router: { type: "string", default: DEFAULT_ROUTER },
        port: { type: "string", default: "9500" },
        host: { type: "string", default: "127.0.0.1" },
        token: { type: "string" },
        "ateapi-token-file": { type: "string" },
        "ateapi-ca": { type: "string" },
        "ateapi-timeout-ms": { type: "string", default: "120000" },
        "attach-timeout-ms": { type: "string", default: "60000" },
        "fork-parallelism": { type: "string", default: "4" },
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
  let config;
  try {
    for (const f of ["ateapi", "atespace", "template", "harness"] as const) if (!values[f]) throw new Error(`--${f} is required`);
    url("--ateapi", values.ateapi!, ["http:", "https:"]);
    url("--router", values.router, ["http:", "https:"]);
    config = {
      ateapiUrl: values.ateapi!,
      atespace: values.atespace!,
      template: values.template!,
      templateAtespace: values["template-atespace"],
      routerUrl: values.router,
      host: values.host,
      port: integerFlag("port", values.port, 0, 65_535),
      token: resolveToken(values.token, process.env, values.host),
      attachToken: process.env[ATTACH_TOKEN_ENV]?.trim() || undefined,
      ateapiTokenFile: values["ateapi-token-file"],
      ateapiCa: values["ateapi-ca"] ? readFileSync(values["ateapi-ca"], "utf8") : undefined,
      ateapiTimeoutMs: integerFlag("ateapi-timeout-ms", values["ateapi-timeout-ms"], 1, 600_000),
      attachTimeoutMs: integerFlag("attach-timeout-ms", values["attach-timeout-ms"], 1, 600_000),
      forkParallelism: integerFlag("fork-parallelism", values["fork-parallelism"], 1, 128),
      harness: await loadHostedHarness(values.harness!),
    };
    if (config.ateapiTokenFile) readFileSync(config.ateapiTokenFile); // fail now, not on the first call
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    return 2;
  }

  const server = await startSubstrateServer({ ...config, log: stdoutLog });
  stdoutLog({
    level: "info",
    msg: "listening",
    url: server.url,
    ateapi: config.ateapiUrl,
    atespace: config.atespace,
    template: config.template,
    harness: config.harness.name,
    router: config.routerUrl,
    authentication: config.token ? "bearer token" : "none (loopback only)",
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

function url(flag: string, v: string, protocols: string[]): void {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new Error(`${flag} ${JSON.stringify(v)} is not a URL`);
  }
  if (!protocols.includes(u.protocol)) throw new Error(`${flag} must be ${protocols.join(" or ")}, got ${u.protocol}`);
  if (u.username || u.password) throw new Error(`${flag} must not carry credentials (use --ateapi-token-file)`);
}

process.exit(await main());
