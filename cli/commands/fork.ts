/**
 * `agentctl fork`: Sessions.Fork (docs/behaviour.md §4.7, §7.5). Prints one line per child,
 * `child <uid> parent=<uid> fork_seq=N name=<name>`, or each child Session as proto3-JSON with
 * --json. The server owns the limits (count 1..128, at most the head); the CLI only refuses
 * --names that cannot match --count, since that is a typo it can see without a round trip.
 */
import { toJson } from "@bufbuild/protobuf";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { pairsFlag, seqFlag, sessionArg, UsageError } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { forTerminal } from "../output.js";

/** Keeps --count within int32; the server's own limit (128) is far below and reported by it. */
const MAX_COUNT_FLAG = 1_000_000n;

export const forkCommand: Command = {
  name: "fork",
  summary: "fork a session at a seq into new child sessions",
  synopsis: "fork <uid> | fork --session UID [--at N] [--count K] [--names a,b,...] [--label k=v ...]",
  help: [
    "--session UID    the parent (or give it as the argument)",
    "--at N           the last parent record the children inherit (default: the head)",
    "--count K        children to create, 1-128 (default: one per --names entry, else 1)",
    "--names a,b      comma-separated child names, one per child (default: unnamed)",
    "--label k=v      a label for every child, replacing the parent's; repeat for more",
  ],
  flags: { session: "string", at: "string", count: "string", names: "string", label: "repeated" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const names = args.strings
      .get("names")
      ?.split(",")
      .map((n) => n.trim());
    const countFlag = seqFlag(args, "count");
    if (countFlag !== undefined && countFlag > MAX_COUNT_FLAG) throw new UsageError(`--count ${countFlag} is far over the limit of 128 children`);
    const count = countFlag === undefined ? (names?.length ?? 1) : Number(countFlag);
    // The server reads a count of 0 as 1; so does this check.
    if (names && names.length !== Math.max(count, 1)) {
      throw new UsageError(`--names gives ${names.length} name${names.length === 1 ? "" : "s"} for ${Math.max(count, 1)} children: give exactly one per child`);
    }
    const children = await ctx.client().fork(uid, { at: seqFlag(args, "at"), count, names, labels: pairsFlag(args, "label") });
    for (const c of children) {
      if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, c));
      else ctx.out.write(`child ${c.metadata?.uid ?? ""} parent=${c.parentUid} fork_seq=${c.forkSeq} name=${forTerminal(c.metadata?.name ?? "")}\n`);
    }
    return 0;
  },
};
