/**
 * `agentctl list`: ListSessions, walking every page (docs/behaviour.md §4.3, §7.4). One line per
 * session, or one Session proto3-JSON object per line with --json.
 */
import { toJson } from "@bufbuild/protobuf";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { noPositionals, seqFlag, UsageError } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { formatSessionLine } from "../output.js";

/** The server caps page sizes anyway; this only keeps the number within int32. */
const MAX_PAGE_SIZE = 1000n;

export const listCommand: Command = {
  name: "list",
  summary: "list a project's sessions (all pages)",
  synopsis: "list [--project P] [--page-size N]",
  help: ["--project P      project to list (the host's default when omitted)", "--page-size N    sessions per request; every page is fetched regardless"],
  flags: { project: "string", "page-size": "string" },

  async run(ctx, args) {
    noPositionals(args);
    const pageSize = seqFlag(args, "page-size") ?? 0n;
    if (pageSize > MAX_PAGE_SIZE) throw new UsageError(`--page-size must be at most ${MAX_PAGE_SIZE}`);
    for await (const s of ctx.client().list({ project: args.strings.get("project"), pageSize: Number(pageSize) })) {
      if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, s));
      else ctx.out.write(formatSessionLine(s) + "\n");
    }
    return 0;
  },
};
