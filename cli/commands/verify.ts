/**
 * `agentctl verify`: fetches a session's whole journal with Replay and checks it locally: every
 * seq, every prev_hash link, every content hash recomputed from the served event (CONTRACT.md
 * §7.1, proto/verify.ts). The server is not trusted to vouch for itself. Exit 1 when it fails.
 */
import { create } from "@bufbuild/protobuf";
import { EventSchema } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { ChainVerifier } from "../../proto/verify.js";
import { sessionArg } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";

export const verifyCommand: Command = {
  name: "verify",
  summary: "recompute a session's hash chain locally",
  synopsis: "verify --session UID",
  help: ["--session UID    the session (or give it as the argument)"],
  flags: { session: "string" },

  async run(ctx, args) {
    const uid = sessionArg(args);
    const v = new ChainVerifier();
    for await (const r of ctx.client().replay(uid)) {
      // A record served without an event is hashed as the empty event, so it fails unless it was one.
      v.push({ seq: r.seq, prevHash: r.prevHash, hash: r.contentHash, event: r.event ?? create(EventSchema) });
    }
    const rep = v.report();
    if (ctx.json) {
      writeJsonLine(ctx, {
        session: uid,
        ok: rep.ok,
        records: rep.records.toString(),
        headHash: rep.headHash,
        ...(rep.ok ? {} : { firstBadSeq: rep.firstBadSeq.toString(), reason: rep.reason }),
      });
    } else if (rep.ok) {
      ctx.out.write(`VERIFIED ${rep.records} records head=${rep.headHash}\n`);
    } else {
      ctx.out.write(`TAMPERED at seq ${rep.firstBadSeq}: ${rep.reason}\n`);
    }
    return rep.ok ? 0 : 1;
  },
};
