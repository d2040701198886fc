/**
 * `agentctl retention`: a project's retention policy (Retention, our extension; docs/retention.md).
 * `set` stores it (the tenant Directory's alarm then deletes, in bounded batches, the sessions idle
 * longer than N days, keeping the latest K); `set --dry-run` stores nothing and lists what the
 * policy would delete now; `get` shows the policy and what it deleted; `clear` removes it.
 */
import { toJson } from "@bufbuild/protobuf";
import { RetentionStatusSchema, SetRetentionResponseSchema } from "../../proto/gen/agentsessions/edge/v1/retention_pb.js";
import { UsageError, type ParsedArgs } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { forTerminal } from "../output.js";

export const retentionCommand: Command = {
  name: "retention",
  summary: "delete a project's idle sessions after N days (retention set|get|clear)",
  synopsis: "retention set --project P --days N [--keep-latest K] [--dry-run] | retention get --project P | retention clear --project P",
  help: [
    "--project P      the project the policy applies to",
    "--days N         delete sessions idle (no change) for longer than N days (1 to 36500)",
    "--keep-latest K  always keep the project's K most recently active sessions (default 0)",
    "--dry-run        store nothing, delete nothing: list the sessions the policy would delete now",
    "",
    "Deletion is DeleteSession's: a tombstone keeps each session's final head. The tenant's",
    "Directory runs the policy on its alarm, a bounded batch at a time. Needs the admin role.",
  ],
  flags: { project: "string", days: "string", "keep-latest": "string", "dry-run": "boolean" },

  async run(ctx, args) {
    const [sub, ...extra] = args.positionals;
    if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
    const project = args.strings.get("project");
    if (project === undefined || project === "") throw new UsageError("retention needs --project P");
    if (sub === "get") {
      const s = await ctx.client().getRetention(project);
      if (ctx.json) {
        writeJsonLine(ctx, toJson(RetentionStatusSchema, s));
        return 0;
      }
      const p = s.policy;
      if (!p || p.days === 0) ctx.out.write(`project ${project}: no retention policy\n`);
      else ctx.out.write(`project ${project}: delete sessions idle over ${p.days} days, keep the latest ${p.keepLatest}; deleted so far ${s.deleted}\n`);
      if (s.lastSweepMs > 0n) ctx.out.write(`last sweep ${new Date(Number(s.lastSweepMs)).toISOString()} (${s.sweeps} so far)\n`);
      return 0;
    }
    if (sub === "clear") {
      await ctx.client().setRetention({ project, days: 0 });
      if (ctx.json) writeJsonLine(ctx, { project, cleared: true });
      else ctx.out.write(`project ${project}: retention policy cleared\n`);
      return 0;
    }
    if (sub !== "set") {
      throw new UsageError(sub === undefined ? "retention needs a subcommand: set, get or clear" : `unknown retention subcommand ${JSON.stringify(sub)}`);
    }
    const days = count(args, "days", 1);
    const keepLatest = args.strings.has("keep-latest") ? count(args, "keep-latest", 0) : 0;
    const dryRun = args.booleans.has("dry-run");
    const r = await ctx.client().setRetention({ project, days, keepLatest, dryRun });
    if (ctx.json) {
      writeJsonLine(ctx, toJson(SetRetentionResponseSchema, r));
      return 0;
    }
    if (!dryRun) {
      ctx.out.write(`project ${project}: sessions idle over ${days} days will be deleted, keeping the latest ${keepLatest}\n`);
      return 0;
    }
    ctx.out.write(`dry run: ${r.wouldDelete.length}${r.truncated ? "+" : ""} session(s) of ${project} would be deleted now\n`);
    for (const c of r.wouldDelete)
      ctx.out.write(`${c.uid}  idle since ${new Date(Number(c.updateTimeMs)).toISOString()}${c.name ? `  ${forTerminal(c.name)}` : ""}\n`);
    return 0;
  },
};

/** A whole-number flag, at least `min`. */
function count(args: ParsedArgs, flag: string, min: number): number {
  const v = args.strings.get(flag);
  if (v === undefined) throw new UsageError(`retention set needs --${flag}`);
  if (!/^\d+$/.test(v) || Number(v) < min)
    throw new UsageError(`--${flag} must be a whole number${min > 0 ? ` of at least ${min}` : ""}, not ${JSON.stringify(v)}`);
  return Number(v);
}
