/**
 * `agentctl replay`: streams committed records verbatim (BEHAVIOUR.md §4.6), in the same format as
 * exec, or one LogRecord proto3-JSON object per line with --json.
 */
import { toJson } from "@bufbuild/protobuf";
import { LogRecordSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { seqFlag, sessionArg } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { formatRecord } from "../output.js";

export const replayCommand: Command = {
  name: "replay",
  summary: "print a session's journal",
  synopsis: "replay --session UID [--from N] [--to N]",
  help: [
    "--session UID    the session (or give it as the argument)",
    "--from N         first seq to print (default 1)",
    "--to N           last seq to print (default: the head)",
  ],
  flags: { session: "string", from: "string", to: "string" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const records = ctx.client().replay(uid, { from: seqFlag(args, "from"), to: seqFlag(args, "to") });
    for await (const r of records) {
      if (ctx.json) writeJsonLine(ctx, toJson(LogRecordSchema, r));
      else ctx.out.write(formatRecord(r) + "\n");
    }
    return 0;
  },
};
