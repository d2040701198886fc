/**
 * `agentctl get`: GetSession (docs/behaviour.md §4.2). Prints a short summary (with a pending_approval
 * row while a parked tool call awaits a decision), or the Session as proto3-JSON with --json.
 */
import { toJson } from "@bufbuild/protobuf";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { sessionArg } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { formatSessionSummary } from "../output.js";

export const getCommand: Command = {
  name: "get",
  summary: "show one session",
  synopsis: "get <uid> | get --session UID",
  help: ["--session UID    the session (or give it as the argument)"],
  flags: { session: "string" },

  async run(ctx, args) {
    const session = await ctx.client().get(sessionArg(args));
    if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, session));
    else ctx.out.write(formatSessionSummary(session));
    return 0;
  },
};
