/**
 * `agentctl resume`: Sessions.Resume. The host re-drives the latest execution when it never ended
 * (crash recovery), then journals LIFECYCLE(RESUME); on a session whose turns all ended it only
 * appends the marker. Prints `session <uid> resume compute=LIVE last_seq=N`, or the Session as
 * proto3-JSON with --json. The re-driven records are not streamed here: `exec --session UID` with
 * no --input recovers the same turn and prints them.
 */
import { toJson } from "@bufbuild/protobuf";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { sessionArg } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { formatResumeLine } from "../output.js";

export const resumeCommand: Command = {
  name: "resume",
  summary: "recover a session's unfinished turn, if any, and mark it resumed",
  synopsis: "resume <uid> | resume --session UID",
  help: ["--session UID    the session (or give it as the argument)"],
  flags: { session: "string" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const s = await ctx.client().resume(uid);
    if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, s));
    else ctx.out.write(formatResumeLine(s, uid) + "\n");
    return 0;
  },
};
