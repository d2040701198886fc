/**
 * `agentctl exec`: runs one turn (BEHAVIOUR.md §4.5) and prints it as it streams: a
 * `session <uid>` line, then each committed record; streamed model deltas go to stderr, since they
 * are never journaled. With --json every ExecUpdate is one proto3-JSON line on stdout.
 */
import { readFile } from "node:fs/promises";
import { create, toJson } from "@bufbuild/protobuf";
import { ExecUpdateSchema, type ExecUpdate } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { noPositionals, seqFlag, UsageError } from "../args.js";
import { writeJsonLine, type Command, type CommandContext } from "../command.js";
import { formatRecord } from "../output.js";

export const execCommand: Command = {
  name: "exec",
  summary: "run a turn, creating a session when none is given",
  synopsis: "exec [--session UID] --input TEXT [--input TEXT ...] [--harness H] [--expected-last-seq N] [--config-file F]",
  help: [
    "--session UID          the session to extend (a new one is created when omitted)",
    "--input TEXT           a user message; repeat for more (at least one)",
    "--harness H            harness for this turn (a new session records it as its own)",
    "--expected-last-seq N  refuse (aborted) unless the session's head is N (0 = empty)",
    "--config-file F        bytes handed to the harness as ExecutionStart.config",
  ],
  flags: { session: "string", input: "repeated", harness: "string", "expected-last-seq": "string", "config-file": "string" },

  async run(ctx, args) {
    noPositionals(args);
    const session = args.strings.get("session");
    const inputs = args.repeated.get("input") ?? [];
    // An inputless Exec is the contract's re-drive (BEHAVIOUR.md §4.5 item 10); this host runs it
    // as a fresh turn, so a forgotten --input would journal a spurious one. Not offered for now.
    if (inputs.length === 0) throw new UsageError("exec needs at least one --input TEXT");
    const configFile = args.strings.get("config-file");
    const config = configFile === undefined ? undefined : await readConfig(configFile);
    let announced = false;
    const emit = (update: ExecUpdate["update"]) => writeJsonLine(ctx, toJson(ExecUpdateSchema, create(ExecUpdateSchema, { update })));
    await ctx.client().exec({
      session,
      inputs,
      harness: args.strings.get("harness"),
      config,
      expectedLastSeq: seqFlag(args, "expected-last-seq"),
      onSession: (s) => {
        if (ctx.json) return emit({ case: "session", value: s });
        // Later session frames (a park or a recovery) restate the same uid; one line is enough.
        if (!announced) ctx.out.write(`session ${s.metadata?.uid ?? ""}\n`);
        announced = true;
      },
      onRecord: (r) => (ctx.json ? emit({ case: "record", value: r }) : ctx.out.write(formatRecord(r) + "\n")),
      onDelta: (d) => (ctx.json ? emit({ case: "delta", value: d }) : writeDelta(ctx, d.chunk, d.done)),
    });
    return 0;
  },
};

function writeDelta(ctx: CommandContext, chunk: string, done: boolean): void {
  ctx.err.write(chunk);
  if (done) ctx.err.write("\n");
}

async function readConfig(path: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "error";
    throw new Error(`cannot read --config-file ${path}: ${code}`);
  }
}
