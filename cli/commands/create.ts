/**
 * `agentctl create`: CreateSession (docs/behaviour.md §4.1). Prints `session <uid>`, or the Session as
 * proto3-JSON with --json.
 */
import { toJson } from "@bufbuild/protobuf";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { noPositionals, pairsFlag } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";

export const createCommand: Command = {
  name: "create",
  summary: "create an empty session",
  synopsis: "create [--project P] [--name N] [--harness H] [--model M] [--label k=v ...]",
  help: [
    "--project P      project (tenant-scoped namespace; the host's default when omitted)",
    "--name N         a name for people; not unique",
    "--harness H      harness the session runs (the host's default, echo, when omitted)",
    "--model M        model the harness should use",
    "--label k=v      a label; repeat for more",
  ],
  flags: { project: "string", name: "string", harness: "string", model: "string", label: "repeated" },

  async run(ctx, args) {
    noPositionals(args);
    const session = await ctx.client().create({
      project: args.strings.get("project"),
      name: args.strings.get("name"),
      harness: args.strings.get("harness"),
      model: args.strings.get("model"),
      labels: pairsFlag(args, "label"),
    });
    if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, session));
    else ctx.out.write(`session ${session.metadata?.uid ?? ""}\n`);
    return 0;
  },
};
