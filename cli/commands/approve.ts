/**
 * `agentctl approve` and `agentctl deny` (docs/behaviour.md §4.11): decide a tool call parked on an
 * approval gate, then Resume the session so the turn finishes (approved: the executor runs the call
 * once; denied: an APPROVAL_DENIED receipt). Without a tuple the pending request is read from
 * GetSession's `pending_approval`; with one, all of --execution, --tool-call and --request-seq.
 *
 * The two steps fail apart: a failed Approve is a failed command like any other RPC, but once the
 * decision is committed it stays committed, so a failed Resume is reported as "decision committed
 * at seq N; resume failed: …" (exit 1) and a later `agentctl resume` finishes the turn.
 * Tested in test/node/cli/approvals.test.ts.
 */
import { toJson } from "@bufbuild/protobuf";
import { LogRecordSchema, type ApprovalRef, type LogRecord } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { SessionSchema } from "../../proto/gen/agentsessions/v1/session_pb.js";
import { describeError } from "../../sdk/client.js";
import { seqFlag, sessionArg, UsageError, type ParsedArgs } from "../args.js";
import { writeJsonLine, type Command, type CommandContext } from "../command.js";
import { formatResumeLine } from "../output.js";

type Tuple = Pick<ApprovalRef, "executionId" | "toolCallId" | "requestSeq">;

export const approveCommand = createDecisionCommand(true);
export const denyCommand = createDecisionCommand(false);

function createDecisionCommand(approved: boolean): Command {
  const name = approved ? "approve" : "deny";
  return {
    name,
    summary: approved
      ? "approve a tool call awaiting approval, then resume the session to run it"
      : "deny a tool call awaiting approval, then resume the session to finish the turn",
    synopsis: `${name} <uid> ${approved ? "[--reason R]" : "--reason R"} [--execution ID --tool-call ID --request-seq N] [--no-resume]`,
    help: [
      "--session UID      the session (or give it as the argument)",
      approved ? "--reason R         why, journaled with the decision (optional)" : "--reason R         why, journaled with the decision (required)",
      "--execution ID --tool-call ID --request-seq N",
      "                   the request to decide, as `get` shows it: all three, or none to",
      "                   decide the session's pending_approval",
      "--no-resume        commit the decision only; `agentctl resume` finishes the turn later",
      "--json             the decision record, then the resumed session, one JSON line each",
    ],
    flags: { session: "string", reason: "string", execution: "string", "tool-call": "string", "request-seq": "string", "no-resume": "boolean" },

    async run(ctx, args) {
      const uid = sessionArg(args);
      const reason = args.strings.get("reason");
      // A denial without a reason leaves whoever reads the journal guessing; an approval may be bare.
      if (!approved && !reason) throw new UsageError("deny needs --reason R (it is journaled with the decision)");
      const tuple = tupleFlags(args) ?? (await pendingTuple(ctx, uid));

      const r = await ctx.client().approve(uid, { ...tuple, approved, reason });
      if (!r.decision) throw new Error("the server committed no decision record");
      const seq = r.decision.seq;
      if (ctx.json) writeJsonLine(ctx, toJson(LogRecordSchema, r.decision));
      else ctx.out.write(`decision committed at seq ${seq} (${decisionOf(r.decision, approved) ? "approved" : "denied"})\n`);
      if (args.booleans.has("no-resume")) return 0;

      try {
        const s = await ctx.client().resume(uid);
        if (ctx.json) writeJsonLine(ctx, toJson(SessionSchema, s));
        else ctx.out.write(formatResumeLine(s, uid) + "\n");
        return 0;
      } catch (e) {
        ctx.err.write(`agentctl ${name}: decision committed at seq ${seq}; resume failed: ${describeError(e, ctx.server)}\n`);
        return 1;
      }
    },
  };
}

/** The explicit tuple, or undefined when none of its flags is given; a partial one is a usage mistake. */
function tupleFlags(args: ParsedArgs): Tuple | undefined {
  const executionId = args.strings.get("execution");
  const toolCallId = args.strings.get("tool-call");
  const requestSeq = seqFlag(args, "request-seq");
  const given = [executionId, toolCallId, requestSeq].filter((v) => v !== undefined).length;
  if (given === 0) return undefined;
  if (executionId === undefined || toolCallId === undefined || requestSeq === undefined) {
    throw new UsageError(
      "--execution, --tool-call and --request-seq name one approval request together: pass all three, or none to decide the session's pending_approval",
    );
  }
  if (executionId === "" || toolCallId === "") throw new UsageError("--execution and --tool-call must not be empty");
  if (requestSeq === 0n) throw new UsageError("--request-seq must be positive (the seq of the APPROVAL_REQUEST record)");
  return { executionId, toolCallId, requestSeq };
}

async function pendingTuple(ctx: CommandContext, uid: string): Promise<Tuple> {
  const p = (await ctx.client().get(uid)).pendingApproval;
  if (!p) {
    // No pending request also covers "decided, not yet resumed" (the decision clears it).
    throw new Error(
      `nothing pending: session ${uid} has no tool call awaiting approval. If a decision is already committed, ` +
        `resume the session (agentctl resume ${uid}); to decide a specific request, pass --execution, --tool-call and --request-seq`,
    );
  }
  return { executionId: p.executionId, toolCallId: p.toolCallId, requestSeq: p.requestSeq };
}

/** The committed decision, as journaled (an exact retry returns the original record). */
function decisionOf(record: LogRecord, asked: boolean): boolean {
  const b = record.event?.body;
  return b?.case === "approvalResult" ? b.value.approved : asked;
}
