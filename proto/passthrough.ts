/**
 * Messages that carry bytes already in their binary encoding, so serving them costs no decode and
 * no re-encode: the Exec stream relays the session object's ExecUpdate bytes, and Replay serves
 * each record's stored event bytes (issue 12: "serve stored records without decoding them").
 * protobuf-es writes a message's unknown fields verbatim after its known ones, so a message whose
 * fields are all unknown encodes to exactly the bytes it was made from. For binary encodings only:
 * JSON has no form for unknown fields, so JSON clients get decoded messages instead.
 * Tested in test/node/proto/passthrough.test.ts.
 */
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { type LogRecord, LogRecordSchema } from "./gen/agentsessions/v1/common_pb.js";

/** A message of `schema` that encodes to exactly `bytes` (which must be one), read only shallowly. */
export function binaryPassthrough<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): MessageShape<Desc> {
  const reader = new BinaryReader(bytes);
  const unknown: { no: number; wireType: WireType; data: Uint8Array }[] = [];
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    unknown.push({ no, wireType, data: reader.skip(wireType, no) });
  }
  const msg = create(schema) as MessageShape<Desc> & { $unknown?: typeof unknown };
  msg.$unknown = unknown;
  return msg;
}

/** LogRecord.event's field number: the last field, so the record encodes exactly as if decoded. */
const EVENT_FIELD = 5;

/** A LogRecord whose event is its stored bytes, unparsed (binary encodings only). */
export function logRecordWithEventBytes(r: { seq: bigint; prevHash: string; hash: string; fence: bigint; event: Uint8Array }): LogRecord {
  const rec = create(LogRecordSchema, { seq: r.seq, prevHash: r.prevHash, contentHash: r.hash, fence: r.fence }) as LogRecord & {
    $unknown?: { no: number; wireType: WireType; data: Uint8Array }[];
  };
  // The unknown field's data is what follows its tag: the length, then the bytes.
  const data = new BinaryWriter().bytes(r.event).finish();
  rec.$unknown = [{ no: EVENT_FIELD, wireType: WireType.LengthDelimited, data }];
  return rec;
}
