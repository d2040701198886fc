/**
 * `agentctl replay`: streams committed records verbatim (docs/behaviour.md §4.6), in the same format as
 * exec, or one LogRecord proto3-JSON object per line with --json. With --resolve every blob
 * reference (docs/blobs.md) is replaced by the part it stands for, each blob checked against its
 * digest: for reading (a resolved record no longer matches its content_hash; verify checks those).
 */
import { toJson } from "@bufbuild/protobuf";
import { LogRecordSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { seqFlag, sessionArg } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { formatRecord } from "../output.js";

export const replayCommand: Command = {
  name: "replay",
  summary: "print a session's journal",
  synopsis: "replay --session UID [--from N] [--to N] [--resolve]",
  help: [
    "--session UID    the session (or give it as the argument)",
    "--from N         first seq to print (default 1)",
    "--to N           last seq to print (default: the head)",
    "--resolve        print large parts in full: fetch each blob a record references and check it",
  ],
  flags: { session: "string", from: "string", to: "string", resolve: "boolean" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const client = ctx.client();
    const resolve = args.booleans.has("resolve");
    const records = client.replay(uid, { from: seqFlag(args, "from"), to: seqFlag(args, "to") });
    for await (const stored of records) {
      const r = resolve ? (await client.resolveRecords(uid, [stored]))[0]! : stored;
      if (ctx.json) writeJsonLine(ctx, toJson(LogRecordSchema, r));
      else ctx.out.write(formatRecord(r) + "\n");
    }
    return 0;
  },
};
