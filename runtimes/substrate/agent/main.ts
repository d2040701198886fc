/**
 * The actor agent's entry, for a substrate template's image (docs/runtimes.md "Deploying the
 * bridge"):
 *
 *   node --import tsx runtimes/substrate/agent/main.ts --harness MODULE [--name NAME] [--port 80] [--host 0.0.0.0]
 *   (environment: AGENTSESSIONS_ATTACH_TOKEN, required unless --host is a loopback address)
 *
 * It imports the harness module at start-up, so its code is in the golden snapshot every actor of
 * the template begins as, and waits for the bridge's Attach. Logs JSON lines on stdout.
 */
import { parseArgs } from "node:util";
import { resolveToken } from "../../node/bearer-token.js";
import { integerFlag } from "../../node/flags.js";
import { importHarness } from "../../node/harness-modules.js";
import { stdoutLog } from "../../node/runtime-log.js";
import { ATTACH_TOKEN_ENV, startAttachAgent } from "./attach-agent.js";

const USAGE = `usage: node --import tsx runtimes/substrate/agent/main.ts --harness MODULE [--name NAME] [--port 80] [--host 0.0.0.0]
       ${ATTACH_TOKEN_ENV}: the token the bridge sends on Attach`;

async function main(): Promise<number> {
  let values;
  let harness;
  let port: number;
  let token: string | undefined;
  try {
    ({ values } = parseArgs({
      options: {
        harness: { type: "string" },
        name: { type: "string" },
        port: { type: "string", default: "80" },
        host: { type: "string", default: "0.0.0.0" },
      },
      strict: true,
      allowPositionals: false,
    }));
    if (!values.harness) throw new Error("--harness MODULE is required");
    port = integerFlag("port", values.port, 0, 65_535);
    token = resolveToken(undefined, process.env, values.host, ATTACH_TOKEN_ENV);
    harness = await importHarness(values.harness);
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    return 2;
  }
  const name = values.name ?? (await harness.describe()).id;
  const agent = await startAttachAgent({ harness, name, port, host: values.host, token, log: stdoutLog });
  stdoutLog({ level: "info", msg: "listening", url: agent.url, harness: name });
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  stdoutLog({ level: "info", msg: "shutting down", signal });
  await agent.close();
  return 0;
}

process.exit(await main());
