/**
 * `agentctl harness serve FILE`: serves the Harness a local module exports to the host over the
 * tunnel (docs/tunnel.md), with the SDK's `serve` (sdk/harness). The module is loaded with tsx (the
 * bin registers it), so a .ts file works as is. Runs until SIGINT or SIGTERM, then says Goodbye,
 * lets open executions finish for a few seconds and exits 0; a refused connection (bad token or
 * name) exits 1. Tested in test/node/sdk-harness/cli-serve.test.ts.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Harness } from "../../runtimes/harness-spi.js";
import { HARNESS_NAME_RULE } from "../../proto/harness-name.js";
import { isHarnessName, serve, type ServeStatus } from "../../sdk/harness/index.js";
import { UsageError } from "../args.js";
import { writeJsonLine, type Command, type CommandContext } from "../command.js";

/** How long open executions may finish after Ctrl-C before the socket closes under them. */
const DRAIN_MS = 5_000;

export const harnessCommand: Command = {
  name: "harness",
  summary: "serve a harness from a local module to the host (harness serve FILE)",
  synopsis: "harness serve FILE [--name N] [--max-streams K]",
  help: [
    "FILE             a .ts or .js module whose default (or `harness`) export is a Harness",
    "--name N         the harness name sessions select (default: the descriptor's id)",
    "--max-streams K  executions to run at once, asked of the host (default: no limit)",
    "",
    "Serves until Ctrl-C, reconnecting when the connection drops. On Ctrl-C it stops taking",
    "executions, lets open ones finish briefly, and exits 0.",
  ],
  flags: { name: "string", "max-streams": "string" },

  async run(ctx, args) {
    const [sub, file, ...extra] = args.positionals;
    if (sub !== "serve")
      throw new UsageError(sub === undefined ? "harness needs a subcommand: serve FILE" : `unknown harness subcommand ${JSON.stringify(sub)}`);
    if (file === undefined) throw new UsageError("harness serve needs a FILE exporting a Harness");
    if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
    const maxStreams = maxStreamsFlag(args.strings.get("max-streams"));
    const harness = await loadHarness(file);
    const descriptor = await harness.describe();
    const name = args.strings.get("name") ?? descriptor.id;
    if (!isHarnessName(name)) {
      const what = args.strings.has("name") ? "--name" : `the descriptor id ${JSON.stringify(descriptor.id)}`;
      throw new UsageError(`${what} is not a harness name (${HARNESS_NAME_RULE}): pass --name`);
    }

    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    try {
      const serving = serve({
        url: ctx.server,
        token: ctx.token,
        name,
        harness,
        maxStreams,
        signal: stop.signal,
        drainMs: DRAIN_MS,
        onStatus: reporter(ctx, name),
      });
      await serving.stopped;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
    ctx.err.write(`stopped serving ${name}\n`);
    return 0;
  },
};

/** The first connection is one line on stdout; reconnects and drops go to stderr. Never the token. */
function reporter(ctx: CommandContext, name: string): (s: ServeStatus) => void {
  let served = false;
  return (s) => {
    if (s.state === "connected") {
      if (served) return void ctx.err.write(`reconnected (connection ${s.connectionId})\n`);
      served = true;
      if (ctx.json) return writeJsonLine(ctx, { serving: name, server: ctx.server, connection: s.connectionId });
      ctx.out.write(`serving ${name} on ${ctx.server} (connection ${s.connectionId})\n`);
    } else if (s.state === "disconnected") {
      ctx.err.write(`disconnected: ${s.reason}; reconnecting in ${(s.retryInMs / 1000).toFixed(1)}s\n`);
    }
  };
}

async function loadHarness(file: string): Promise<Harness> {
  let mod: Record<string, unknown>;
  try {
    mod = await importModule(pathToFileURL(resolve(file)).href);
  } catch (e) {
    throw new Error(`cannot load ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const h = mod.default ?? mod.harness;
  if (!isHarness(h)) throw new Error(`${file} must export a Harness (describe and run) as its default export or as \`harness\``);
  return h;
}

/**
 * Node 20 cannot import TypeScript: when the CLI runs compiled (the installed package), a .ts
 * harness is loaded again with tsx's loader registered, which only that case pays for.
 */
async function importModule(url: string): Promise<Record<string, unknown>> {
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (e) {
    if ((e as { code?: string }).code !== "ERR_UNKNOWN_FILE_EXTENSION") throw e;
    (await import("tsx/esm/api")).register();
    return (await import(`${url}?tsx`)) as Record<string, unknown>;
  }
}

function isHarness(v: unknown): v is Harness {
  const h = v as Partial<Harness> | null | undefined;
  return typeof h === "object" && h !== null && typeof h.describe === "function" && typeof h.run === "function";
}

function maxStreamsFlag(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d{1,6}$/.test(v)) throw new UsageError(`--max-streams must be a non-negative integer, got ${JSON.stringify(v)}`);
  return Number(v);
}
