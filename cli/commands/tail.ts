/**
 * `agentctl tail`: prints a session's journal from a seq (Tail, docs/follow.md), and with -f keeps
 * following it: each record as it commits, across turns, and the running turn's streamed text (on
 * a terminal inline, else on stderr, as `exec` shows it). Reconnects by itself from the seq after
 * the last record it printed, so nothing is printed twice. With --json, one LogRecord proto3-JSON
 * object per line on stdout, as `replay --json` prints, and deltas as TailDelta objects (no seq)
 * on stderr.
 */
import { toJson } from "@bufbuild/protobuf";
import { TailDeltaSchema } from "../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { LogRecordSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { seqFlag, sessionArg } from "../args.js";
import type { Command } from "../command.js";
import { formatRecord } from "../output.js";
import { createDeltaWriter } from "./exec.js";

export const tailCommand: Command = {
  name: "tail",
  summary: "print a session's journal from a seq, and follow it live with -f",
  synopsis: "tail <uid> [--from N] [-f] [--json]",
  help: [
    "--session UID    the session (or give it as the argument)",
    "--from N         first seq to print (default 1)",
    "-f, --follow     keep following: new records as they commit, and the running turn's text",
  ],
  flags: { session: "string", from: "string", follow: "boolean" },
  aliases: { f: "follow" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const deltas = createDeltaWriter(ctx);
    const events = ctx.client().tail(uid, {
      fromSeq: seqFlag(args, "from"),
      follow: args.booleans.has("follow"),
      onReconnect: (from, why) => {
        deltas.endLine();
        ctx.err.write(`tail: reconnecting from seq ${from} (${why})\n`);
      },
    });
    try {
      for await (const ev of events) {
        if (ev.kind === "record") {
          deltas.endLine();
          ctx.out.write((ctx.json ? JSON.stringify(toJson(LogRecordSchema, ev.record)) : formatRecord(ev.record)) + "\n");
        } else if (ctx.json) ctx.err.write(JSON.stringify(toJson(TailDeltaSchema, ev.delta)) + "\n");
        else deltas.write(ev.delta.chunk, ev.delta.done);
      }
    } finally {
      deltas.endLine();
    }
    return 0;
  },
};
