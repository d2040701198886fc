/**
 * What every agentctl command is: its flags, its usage text and a `run` that returns the exit
 * status. The context carries the global flags and the client; commands write only through `out`
 * and `err` so tests can run them in process.
 */
import { DEFAULT_SERVER, SessionsClient } from "../sdk/client.js";
import { nodeFetch } from "../sdk/node/index.js";
import type { FlagKind, ParsedArgs } from "./args.js";

export interface Writer {
  write(s: string): unknown;
}

export interface CommandContext {
  server: string;
  /** Bearer token; never printed. */
  token: string | undefined;
  json: boolean;
  out: Writer;
  err: Writer;
  /** `out` is a terminal: `exec` then shows streamed model text inline, where a person reads it. */
  outIsTty: boolean;
  /** `err` is a terminal: long reads then show a progress line there (cli/progress.ts). */
  errIsTty: boolean;
  /** Reads all of standard input (the `hash` command). */
  readStdin(): Promise<string>;
  /** The Sessions client, built on first use so offline commands never need a server. */
  client(): SessionsClient;
}

export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The synopsis, e.g. "get <uid> | --session UID". */
  synopsis: string;
  /** Lines describing each flag, printed under the synopsis. */
  help: string[];
  flags: Record<string, FlagKind>;
  /** Short flags of this command, e.g. `{ f: "follow" }` for `-f`. */
  aliases?: Record<string, string>;
  run(ctx: CommandContext, args: ParsedArgs): Promise<number>;
}

/** Flags every command accepts, before or after the command name. */
export const GLOBAL_FLAGS: Record<string, FlagKind> = {
  server: "string",
  token: "string",
  json: "boolean",
  help: "boolean",
};

export const GLOBAL_HELP = [
  `--server URL     the host (default ${DEFAULT_SERVER}, or $AGENTSESSIONS_SERVER)`,
  "--token TOKEN    bearer token (or $AGENTSESSIONS_TOKEN)",
  "--json           one proto3-JSON object per line",
  "-h, --help       this help",
];

export function createCommandContext(opts: {
  server: string;
  token: string | undefined;
  json: boolean;
  out: Writer;
  err: Writer;
  outIsTty?: boolean;
  errIsTty?: boolean;
  readStdin: () => Promise<string>;
}): CommandContext {
  let client: SessionsClient | undefined;
  return {
    ...opts,
    outIsTty: opts.outIsTty ?? false,
    errIsTty: opts.errIsTty ?? false,
    client: () => (client ??= new SessionsClient({ server: opts.server, token: opts.token, fetch: nodeFetch })),
  };
}

/** Writes one JSON value as a line (`--json`). */
export function writeJsonLine(ctx: CommandContext, value: unknown): void {
  ctx.out.write(JSON.stringify(value) + "\n");
}
