/**
 * `agentctl suspend`: Sessions.Suspend (docs/behaviour.md §4.8, §7.5). The host snapshots the session
 * and journals LIFECYCLE(SUSPEND); a running turn is never interrupted (aborted: Cancel it first).
 * Prints `session <uid> suspend compute=COLD last_seq=N`, or the Session as proto3-JSON with --json.
 */
import { toJson } from "@bufbuild/protobuf";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { sessionArg } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { computeStateName } from "../output.js";

export const suspendCommand: Command = {
  name: "suspend",
  summary: "snapshot a session and mark it suspended (compute COLD)",
  synopsis: "suspend <uid> | suspend --session UID",
  help: ["--session UID    the session (or give it as the argument)"],
  flags: { session: "string" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const s = await ctx.client().suspend(uid);
    if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, s));
    else ctx.out.write(`session ${s.metadata?.uid || uid} suspend compute=${computeStateName(s.computeState)} last_seq=${s.lastSeq}\n`);
    return 0;
  },
};
