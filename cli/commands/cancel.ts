/**
 * `agentctl cancel`: Sessions.Cancel. Stops the session's running execution (or closes an
 * interrupted one so Resume will not re-drive it): the host journals END{CANCELED} and
 * LIFECYCLE(CANCEL) with the reason, and the turn's Exec stream ends canceled. With nothing to
 * cancel it fails with failed_precondition. Prints `session <uid> cancel exec=CANCELED last_seq=N`,
 * or the Session as proto3-JSON with --json.
 */
import { toJson } from "@bufbuild/protobuf";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import type { CancelReason } from "../../sdk/client.js";
import { sessionArg, UsageError } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";
import { execStateName } from "../output.js";

const REASONS: readonly CancelReason[] = ["USER", "TIMEOUT", "INTERNAL"];

export const cancelCommand: Command = {
  name: "cancel",
  summary: "stop a session's running (or interrupted) execution",
  synopsis: "cancel <uid> | cancel --session UID [--execution ID] [--reason USER|TIMEOUT|INTERNAL]",
  help: [
    "--session UID    the session (or give it as the argument)",
    "--execution ID   cancel only if this execution is the one running (default: whichever is)",
    "--reason R       USER (default), TIMEOUT or INTERNAL; journaled on the CANCEL marker",
  ],
  flags: { session: "string", execution: "string", reason: "string" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const reason = args.strings.get("reason")?.toUpperCase();
    if (reason !== undefined && !REASONS.includes(reason as CancelReason)) {
      throw new UsageError(`--reason must be one of ${REASONS.join(", ")}, got ${JSON.stringify(args.strings.get("reason"))}`);
    }
    const s = await ctx.client().cancel(uid, { executionId: args.strings.get("execution"), reason: reason as CancelReason | undefined });
    if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, s));
    else ctx.out.write(`session ${s.metadata?.uid || uid} cancel exec=${execStateName(s.execState)} last_seq=${s.lastSeq}\n`);
    return 0;
  },
};
