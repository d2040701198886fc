/**
 * `agentctl delete`: Sessions.DeleteSession. Erases the session for good (no confirmation: the
 * command is explicit and takes exactly one uid); its forked children survive. Prints what was
 * deleted, `deleted <uid> last_seq=N`, or the final Session as proto3-JSON with --json.
 */
import { toJson } from "@bufbuild/protobuf";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { sessionArg } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";

export const deleteCommand: Command = {
  name: "delete",
  summary: "erase a session (its forked children survive)",
  synopsis: "delete <uid> | delete --session UID",
  help: ["--session UID    the session (or give it as the argument)"],
  flags: { session: "string" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const s = await ctx.client().delete(uid);
    if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, s));
    else ctx.out.write(`deleted ${s.metadata?.uid || uid} last_seq=${s.lastSeq}\n`);
    return 0;
  },
};
