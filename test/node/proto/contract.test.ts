/**
 * Our protos against the contract's tables (docs/contract.md §2-§4, transcribed into
 * contract-tables.json): every message field's number, name, type and label (presence, oneof,
 * repeated, map), every enum value, the reserved numbers, and the services' methods and shapes.
 *
 * Each message must have exactly its contract fields: this host's own additions live in
 * agentsessions.edge.v1, never in the contract's messages (contract-descriptors.test.ts also
 * checks that nothing else is declared in agentsessions.v1).
 */
import { readFileSync } from "node:fs";
import { createRegistry, ScalarType, type DescField } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { file_agentsessions_v1_common } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { file_agentsessions_v1_harness, Harness } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { file_agentsessions_v1_harness_registry, HarnessRegistry } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { file_agentsessions_v1_session, Sessions } from "../../../proto/gen/agentsessions/v1/session_pb.js";

const tables = JSON.parse(readFileSync(new URL("./contract-tables.json", import.meta.url), "utf8")) as {
  messages: Record<string, Row[]>;
  enums: Record<string, [string, number][]>;
};
type Row = [number, string, string, string];
const registry = createRegistry(
  file_agentsessions_v1_common,
  file_agentsessions_v1_session,
  file_agentsessions_v1_harness,
  file_agentsessions_v1_harness_registry,
);

function typeOf(f: DescField): string {
  switch (f.fieldKind) {
    case "scalar":
      return ScalarType[f.scalar].toLowerCase();
    case "enum":
      return qualified(f.enum.typeName);
    case "message":
      return qualified(f.message.typeName);
    case "list":
      return f.listKind === "scalar" ? ScalarType[f.scalar].toLowerCase() : qualified(f.listKind === "message" ? f.message.typeName : f.enum.typeName);
    case "map":
      return "map<string,string>";
  }
}

function labelOf(f: DescField): string {
  if (f.fieldKind === "list") return "rep";
  if (f.fieldKind === "map") return "map";
  if (f.oneof) return `oneof:${f.oneof.name}`;
  return f.proto.proto3Optional ? "opt" : "-";
}

const qualified = (typeName: string) => typeName.replace(/^agentsessions\.v1\./, "").replace(/^google\.protobuf\./, "");

const byNumber = (rows: readonly (readonly unknown[])[]) => [...rows].sort((a, b) => (a[0] as number) - (b[0] as number));

function expectFields(name: string, rows: Row[]): void {
  const m = registry.getMessage(`agentsessions.v1.${name}`);
  expect(m, name).toBeDefined();
  const actual = m!.fields.map((f) => [f.number, f.name, typeOf(f), labelOf(f)]);
  expect(byNumber(actual)).toEqual(byNumber(rows.map(([n, fname, type, label]) => [n, fname, type, label])));
  for (const f of m!.fields) expect(f.jsonName, "no json_name overrides").toBe(f.localName);
}

describe("wire compatibility with the contract", () => {
  for (const [name, fields] of Object.entries(tables.messages)) {
    it(`message ${name}: numbers, names, types and labels match`, () => {
      // Exactly the contract's fields, each checked, and nothing else.
      expectFields(name, fields);
    });
  }

  it("enums: every value name and number matches, including unprefixed nested ones", () => {
    for (const [name, values] of Object.entries(tables.enums)) {
      const e = registry.getEnum(`agentsessions.v1.${name}`);
      expect(e, name).toBeDefined();
      expect(e!.values.map((v) => [v.name, v.number])).toEqual(values);
    }
  });

  it("reserved numbers: Event 1, 5, 6 and Session 4 are reserved and unused", () => {
    const ranges = (n: string) => registry.getMessage(`agentsessions.v1.${n}`)!.proto.reservedRange.map((r) => [r.start, r.end]);
    expect(ranges("Event")).toEqual([
      [1, 2],
      [5, 6],
      [6, 7],
    ]);
    expect(ranges("Session")).toEqual([[4, 5]]);
  });

  it("services: names, methods and streaming shapes", () => {
    expect(Sessions.typeName).toBe("agentsessions.v1.Sessions");
    expect(Sessions.methods.map((m) => [m.name, m.methodKind])).toEqual([
      ["CreateSession", "unary"],
      ["GetSession", "unary"],
      ["ListSessions", "unary"],
      ["DeleteSession", "unary"],
      ["Exec", "server_streaming"],
      ["Replay", "server_streaming"],
      ["Approve", "unary"],
      ["Cancel", "unary"],
      ["Suspend", "unary"],
      ["Resume", "unary"],
      ["Fork", "unary"],
    ]);
    expect(Harness.methods.map((m) => [m.name, m.methodKind])).toEqual([
      ["Describe", "unary"],
      ["Connect", "bidi_streaming"],
    ]);
    expect(HarnessRegistry.methods.map((m) => m.name)).toEqual(["RegisterHarness", "GetHarness", "ListHarnesses", "RetireHarness"]);
  });
});
