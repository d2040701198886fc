/**
 * `agentctl hash`: the content hash of one event read as proto3-JSON on stdin (docs/contract.md §7).
 * Offline: no server is contacted. The event is normalized first (§7.3), as the journal would
 * before hashing it; both proto field names and lowerCamelCase JSON names are accepted.
 */
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { contentHash, GENESIS_HASH } from "../../proto/canon.js";
import { EventSchema, type Event } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { normalizeEvent } from "../../proto/normalize.js";
import { hashFlag, noPositionals, seqFlag, UsageError } from "../args.js";
import { writeJsonLine, type Command } from "../command.js";

export const hashCommand: Command = {
  name: "hash",
  summary: "print the content hash of one event read from stdin (offline)",
  synopsis: "hash --seq N [--prev-hash H] < event.json",
  help: ["--seq N          the record's seq (1 for the first record)", '--prev-hash H    the previous record\'s content hash; "" (the default) only for seq 1'],
  flags: { seq: "string", "prev-hash": "string" },

  async run(ctx, args) {
    noPositionals(args);
    const seq = seqFlag(args, "seq");
    if (seq === undefined || seq < 1n) throw new UsageError("--seq N is required and starts at 1");
    const prevHash = hashFlag(args, "prev-hash") ?? (seq === 1n ? GENESIS_HASH : undefined);
    if (prevHash === undefined) throw new UsageError("--prev-hash H is required when --seq is not 1");
    const event = parseEvent(await ctx.readStdin());
    const hash = contentHash(normalizeEvent(event), prevHash, seq);
    if (ctx.json) writeJsonLine(ctx, { seq: seq.toString(), prevHash, contentHash: hash });
    else ctx.out.write(hash + "\n");
    return 0;
  },
};

function parseEvent(text: string): Event {
  let json: JsonValue;
  try {
    json = JSON.parse(text) as JsonValue;
  } catch {
    throw new Error("stdin is not JSON: expected one agentsessions.v1.Event as proto3-JSON");
  }
  try {
    return fromJson(EventSchema, json);
  } catch (e) {
    // Keep only the first clause: protobuf-es appends the offending JSON value, which may be content.
    const what = e instanceof Error ? e.message.split(":")[0] : "invalid";
    throw new Error(`stdin is not a proto3-JSON agentsessions.v1.Event (${what})`);
  }
}
