/**
 * `agentctl exec`: runs one turn (docs/behaviour.md §4.5) and prints it as it streams: a
 * `session <uid>` line, then each committed record. Streamed model deltas are never journaled:
 * on a terminal they are shown inline on stdout, ahead of the OUTPUT record that commits them;
 * when stdout is a pipe or file they go to stderr, so stdout stays one record per line. With --json
 * every ExecUpdate is one proto3-JSON line on stdout.
 *
 * With --session and no --input this is the contract's inputless Exec (§4.5 item 10): it recovers
 * the session's latest turn if it never ended, or else runs a turn with no inputs. A turn that
 * parks on a tool call awaiting approval ends OK with a `parked: …` line naming `agentctl approve`.
 *
 * A dropped connection does not lose the turn: it keeps running on the host, and the SDK
 * re-attaches with Tail from the last record printed (a `reattaching` line on stderr), printing
 * the rest once (sdk/client.ts).
 */
import { readFile } from "node:fs/promises";
import { create, toJson } from "@bufbuild/protobuf";
import { ExecUpdateSchema, type ExecUpdate } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { noPositionals, seqFlag, UsageError } from "../args.js";
import { writeJsonLine, type Command, type CommandContext } from "../command.js";
import { formatParkedLine, formatRecord, forTerminal } from "../output.js";

export const execCommand: Command = {
  name: "exec",
  summary: "run a turn (or recover an unfinished one), creating a session when none is given",
  synopsis: "exec [--session UID] [--input TEXT ...] [--harness H] [--expected-last-seq N] [--config-file F]",
  help: [
    "--session UID          the session to extend (a new one is created when omitted)",
    "--input TEXT           a user message; repeat for more. Without any, --session is required:",
    "                       an unfinished turn is recovered, else a turn runs with no inputs",
    "--harness H            harness for this turn (a new session records it as its own)",
    "--expected-last-seq N  refuse (aborted) unless the session's head is N (0 = empty)",
    "--config-file F        bytes handed to the harness as ExecutionStart.config",
  ],
  flags: { session: "string", input: "repeated", harness: "string", "expected-last-seq": "string", "config-file": "string" },

  async run(ctx, args) {
    noPositionals(args);
    const session = args.strings.get("session");
    const inputs = args.repeated.get("input") ?? [];
    // An inputless Exec on a new session would only journal an empty turn: most likely a forgotten
    // --input, so refuse it. On an existing session it is the recovery Exec (§4.5 item 10).
    if (inputs.length === 0 && !session) {
      throw new UsageError("exec needs at least one --input TEXT (or --session UID to recover or continue a session)");
    }
    const configFile = args.strings.get("config-file");
    const config = configFile === undefined ? undefined : await readConfig(configFile);
    let announced = false;
    const deltas = createDeltaWriter(ctx);
    const emit = (update: ExecUpdate["update"]) => writeJsonLine(ctx, toJson(ExecUpdateSchema, create(ExecUpdateSchema, { update })));
    try {
      await ctx.client().exec({
        session,
        inputs,
        harness: args.strings.get("harness"),
        config,
        expectedLastSeq: seqFlag(args, "expected-last-seq"),
        onSession: (s) => {
          if (ctx.json) return emit({ case: "session", value: s });
          // Later session frames (a park or a recovery) restate the same uid; one line is enough.
          // A park's final frame carries the pending approval: say what to run next.
          if (!announced) ctx.out.write(`session ${s.metadata?.uid ?? ""}\n`);
          else if (s.pendingApproval) {
            deltas.endLine();
            ctx.out.write(formatParkedLine(s) + "\n");
          }
          announced = true;
        },
        onRecord: (r) => {
          if (ctx.json) return emit({ case: "record", value: r });
          deltas.endLine();
          ctx.out.write(formatRecord(r) + "\n");
        },
        onDelta: (d) => (ctx.json ? emit({ case: "delta", value: d }) : deltas.write(d.chunk, d.done)),
        onReattach: (from, why) => {
          deltas.endLine();
          ctx.err.write(`exec: the stream dropped (${why}); reattaching from seq ${from}\n`);
        },
      });
    } finally {
      // A stream cut off mid-chunk must not leave the error message on the same line.
      deltas.endLine();
    }
    return 0;
  },
};

/**
 * Streamed text goes inline to a terminal stdout, else to stderr. A stream that stops mid-line
 * (no `done` chunk, or a record arriving first) is ended with a newline before the next record
 * line, so every record still starts a line of its own.
 */
export function createDeltaWriter(ctx: CommandContext): { write(chunk: string, done: boolean): void; endLine(): void } {
  const w = ctx.outIsTty ? ctx.out : ctx.err;
  let open = false;
  const endLine = () => {
    if (open) w.write("\n");
    open = false;
  };
  return {
    write(chunk, done) {
      if (chunk !== "") {
        w.write(forTerminal(chunk));
        open = !chunk.endsWith("\n");
      }
      if (done) endLine();
    },
    endLine,
  };
}

async function readConfig(path: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "error";
    throw new Error(`cannot read --config-file ${path}: ${code}`);
  }
}
