/**
 * Registry migration 2: our placements leave the contract's HarnessSpec.
 *
 * Registrations stored before it carry `tunnel` (field 5) or `http_runtime` (field 6) inside the
 * binary HarnessSpec, where the contract's protos see only unknown fields. This rewrites each such
 * row as it is stored today: the spec without them, the placement beside it as an
 * agentsessions.edge.v1.EdgePlacement (tunnel = 1, http_runtime = 2, the same inner message), and
 * the spec_digest of the spec that remains (the one any client can recompute from the returned
 * spec). The only place the store reads a spec's bytes. Tested in
 * test/node/registry/registry-store.test.ts with rows written the old way.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { decodeBinary } from "../../proto/binary-reader.js";
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { specDigest } from "../../proto/canon.js";
import { EdgePlacementSchema } from "../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { HarnessSpecSchema } from "../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import type { SqlDb } from "../storage/sql.js";

/**
 * Our placements' old HarnessSpec field numbers, with their names and their EdgePlacement numbers.
 * The registry service names them when a client still sends them (worker/registry-service.ts).
 */
export const LEGACY_PLACEMENT_FIELDS: ReadonlyMap<number, { name: string; edgeField: number }> = new Map([
  [5, { name: "tunnel", edgeField: 1 }],
  [6, { name: "http_runtime", edgeField: 2 }],
]);

/** The spec without the moved fields, and the placement they made (undefined when none moved). */
export function splitLegacySpec(spec: Uint8Array): { spec: Uint8Array; placement?: Uint8Array } {
  const reader = new BinaryReader(spec);
  const kept = new BinaryWriter();
  let placement: Uint8Array | undefined;
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const [no, wireType] = reader.tag();
    const to = LEGACY_PLACEMENT_FIELDS.get(no)?.edgeField;
    if (to !== undefined && wireType === WireType.LengthDelimited) {
      // In a oneof the last member on the wire wins, as a decoder of the old schema would read it.
      placement = new BinaryWriter().tag(to, WireType.LengthDelimited).bytes(reader.bytes()).finish();
      continue;
    }
    reader.skip(wireType, no);
    kept.raw(spec.subarray(start, reader.pos));
  }
  if (!placement) return { spec };
  // Re-encoded, so the bytes equal what a new registration of the same content stores.
  const s = decodeBinary(HarnessSpecSchema, kept.finish());
  const p = decodeBinary(EdgePlacementSchema, placement);
  return { spec: toBinary(HarnessSpecSchema, s), placement: toBinary(EdgePlacementSchema, create(EdgePlacementSchema, p)) };
}

export function movePlacementsOutOfSpecs(db: SqlDb): void {
  const rows = db.query<{ name: string; spec: Uint8Array }>("SELECT name, spec FROM harnesses WHERE placement IS NULL");
  for (const row of rows) {
    const split = splitLegacySpec(row.spec);
    if (!split.placement) continue;
    const digest = specDigest(decodeBinary(HarnessSpecSchema, split.spec)).digest;
    db.query("UPDATE harnesses SET spec = ?, placement = ?, spec_digest = ? WHERE name = ?", split.spec, split.placement, digest, row.name);
  }
}
