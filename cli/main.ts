/**
 * agentctl: the command-line client of an agentsessions host (docs/behaviour.md §7.4). `runCli` parses
 * the global flags, dispatches to one module per command under commands/, and maps failures to
 * exit statuses: 2 for a usage mistake, 1 for a failed RPC or check. It never prints tokens,
 * config bytes or stacks. Run by cli/bin/agentctl.js; tested in test/node/cli/.
 */
import { ConnectError } from "@connectrpc/connect";
import { DEFAULT_SERVER, describeError } from "../sdk/client.js";
import { SDK_VERSION } from "../sdk/harness/version.js";
import { parseArgs, UsageError } from "./args.js";
import { createCommandContext, GLOBAL_FLAGS, GLOBAL_HELP, type Command, type Writer } from "./command.js";
import { approveCommand, denyCommand } from "./commands/approve.js";
import { cancelCommand } from "./commands/cancel.js";
import { createCommand } from "./commands/create.js";
import { deleteCommand } from "./commands/delete.js";
import { execCommand } from "./commands/exec.js";
import { exportCommand } from "./commands/export.js";
import { forkCommand } from "./commands/fork.js";
import { getCommand } from "./commands/get.js";
import { harnessCommand } from "./commands/harness.js";
import { keyCommand } from "./commands/key.js";
import { hashCommand } from "./commands/hash.js";
import { listCommand } from "./commands/list.js";
import { replayCommand } from "./commands/replay.js";
import { resumeCommand } from "./commands/resume.js";
import { retentionCommand } from "./commands/retention.js";
import { suspendCommand } from "./commands/suspend.js";
import { tailCommand } from "./commands/tail.js";
import { verifyCommand } from "./commands/verify.js";

export const COMMANDS: readonly Command[] = [
  createCommand,
  getCommand,
  listCommand,
  execCommand,
  cancelCommand,
  forkCommand,
  suspendCommand,
  resumeCommand,
  approveCommand,
  denyCommand,
  deleteCommand,
  retentionCommand,
  replayCommand,
  tailCommand,
  verifyCommand,
  hashCommand,
  exportCommand,
  harnessCommand,
  keyCommand,
];

export interface CliIo {
  out: Writer;
  err: Writer;
  /** `out` is a terminal (process.stdout.isTTY); default false. */
  outIsTty?: boolean;
  /** `err` is a terminal (process.stderr.isTTY); default false. */
  errIsTty?: boolean;
  env: Record<string, string | undefined>;
  readStdin: () => Promise<string>;
}

/** Runs one invocation (argv without `node agentctl`) and returns the exit status. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const { name, rest } = splitCommand(argv);
  if (name === undefined && rest.includes("--version")) {
    io.out.write(`agentctl ${SDK_VERSION}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (name === undefined || name === "help") {
    const topic = COMMANDS.find((c) => c.name === rest.find((a) => !a.startsWith("-")));
    const asked = name === "help" || rest.some((a) => a === "--help" || a === "-h");
    // Asked-for help goes to stdout with status 0; a bare `agentctl` is a usage mistake.
    (asked ? io.out : io.err).write(topic ? commandUsage(topic) : usage());
    return asked ? 0 : 2;
  }
  if (!command) {
    io.err.write(`agentctl: unknown command ${JSON.stringify(name)}\n\n${usage()}`);
    return 2;
  }
  let server = io.env.AGENTSESSIONS_SERVER || DEFAULT_SERVER;
  try {
    const args = parseArgs(rest, { flags: { ...GLOBAL_FLAGS, ...command.flags }, aliases: { h: "help", ...command.aliases } });
    if (args.booleans.has("help")) {
      io.out.write(commandUsage(command));
      return 0;
    }
    server = args.strings.get("server") ?? server;
    if (!/^https?:\/\/[^/]/.test(server)) throw new UsageError(`--server must be an http(s) URL, got ${JSON.stringify(server)}`);
    const ctx = createCommandContext({
      server,
      token: args.strings.get("token") ?? (io.env.AGENTSESSIONS_TOKEN || undefined),
      json: args.booleans.has("json"),
      out: io.out,
      err: io.err,
      outIsTty: io.outIsTty,
      errIsTty: io.errIsTty,
      readStdin: io.readStdin,
    });
    return await command.run(ctx, args);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err.write(`agentctl ${command.name}: ${e.message}\n\n${commandUsage(command)}`);
      return 2;
    }
    if (e instanceof ConnectError) {
      io.err.write(`agentctl ${command.name}: ${describeError(e, server)}\n`);
      return 1;
    }
    io.err.write(`agentctl ${command.name}: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

/** The command is the first argument that is neither a global flag nor a global flag's value. */
function splitCommand(argv: readonly string[]): { name: string | undefined; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--server" || a === "--token") {
      i++;
      continue;
    }
    if (a.startsWith("-")) continue;
    return { name: a, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { name: undefined, rest: [...argv] };
}

export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    "usage: agentctl <command> [flags]",
    "",
    "commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    "",
    "global flags:",
    ...GLOBAL_HELP.map((l) => "  " + l),
    "  --version        print agentctl's version",
    "",
    "Run `agentctl <command> --help` for a command's flags.",
    "",
  ].join("\n");
}

export function commandUsage(c: Command): string {
  return [
    `usage: agentctl ${c.synopsis}`,
    "",
    c.summary,
    "",
    ...c.help.map((l) => "  " + l),
    "",
    "global flags:",
    ...GLOBAL_HELP.map((l) => "  " + l),
    "",
  ].join("\n");
}

/** The process entry: real stdio and environment, exit status through process.exitCode. */
export async function main(): Promise<void> {
  // `agentctl exec … | head -1`: a reader that hangs up early is not an error of ours.
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code !== "EPIPE") throw e;
    process.exit(process.exitCode ?? 0);
  });
  process.exitCode = await runCli(process.argv.slice(2), {
    out: process.stdout,
    err: process.stderr,
    outIsTty: process.stdout.isTTY === true,
    errIsTty: process.stderr.isTTY === true,
    env: process.env,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString("utf8");
    },
  });
}
