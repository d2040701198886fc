/**
 * Our agentsessions.v1 descriptors hold the contract and nothing else: every message, field, enum
 * value and service method in proto/agentsessions/v1 must be one the contract's tables define
 * (test/fixtures/contract/agentsessions-v1.json, transcribed from them), and every one they define
 * must be here. This host's own additions live in agentsessions.edge.v1 (docs/contract.md): an
 * extension inside the contract's package would reach a client built from the reference's protos
 * as an unknown field, outside any digest it can recompute, and could collide with a future
 * contract field of the same number.
 */
import { readFileSync } from "node:fs";
import { ScalarType, type DescEnum, type DescField, type DescFile, type DescMessage } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { file_agentsessions_v1_common } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { file_agentsessions_v1_harness } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { file_agentsessions_v1_harness_registry } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { file_agentsessions_v1_session } from "../../../proto/gen/agentsessions/v1/session_pb.js";

type Field = [number, string, string, string];
const contract = JSON.parse(readFileSync(new URL("../../fixtures/contract/agentsessions-v1.json", import.meta.url), "utf8")) as {
  messages: Record<string, { fields: Field[]; reserved?: number[] }>;
  enums: Record<string, [string, number][]>;
  services: Record<string, [string, string, string, string][]>;
};

const FILES: DescFile[] = [file_agentsessions_v1_common, file_agentsessions_v1_session, file_agentsessions_v1_harness, file_agentsessions_v1_harness_registry];
const PACKAGE = "agentsessions.v1.";

/** The contract's name of a type: no package, nested ones as Outer.Inner, well-known types bare. */
const local = (typeName: string) => typeName.replace(PACKAGE, "").replace(/^google\.protobuf\./, "");

function allMessages(): DescMessage[] {
  const out: DescMessage[] = [];
  const visit = (m: DescMessage) => {
    // Map entries are implicit in the contract (a map<string,string> field), not messages of it.
    if (m.proto.options?.mapEntry) return;
    out.push(m);
    m.nestedMessages.forEach(visit);
  };
  for (const f of FILES) f.messages.forEach(visit);
  return out;
}

function allEnums(): DescEnum[] {
  const out: DescEnum[] = [];
  const visit = (m: DescMessage) => {
    out.push(...m.nestedEnums);
    m.nestedMessages.forEach(visit);
  };
  for (const f of FILES) {
    out.push(...f.enums);
    f.messages.forEach(visit);
  }
  return out;
}

function typeOf(f: DescField): string {
  switch (f.fieldKind) {
    case "scalar":
      return ScalarType[f.scalar].toLowerCase();
    case "enum":
      return local(f.enum.typeName);
    case "message":
      return local(f.message.typeName);
    case "list":
      return f.listKind === "scalar" ? ScalarType[f.scalar].toLowerCase() : local(f.listKind === "message" ? f.message.typeName : f.enum.typeName);
    case "map":
      return `map<${ScalarType[f.mapKey].toLowerCase()},${f.mapKind === "scalar" ? ScalarType[f.scalar].toLowerCase() : f.mapKind}>`;
  }
}

function labelOf(f: DescField): string {
  if (f.fieldKind === "list") return "rep";
  if (f.fieldKind === "map") return "map";
  if (f.oneof) return `oneof:${f.oneof.name}`;
  return f.proto.proto3Optional ? "opt" : "-";
}

const byNumber = <T extends readonly unknown[]>(rows: T[]) => [...rows].sort((a, b) => (a[0] as number) - (b[0] as number));

describe("agentsessions.v1 descriptors against the contract's tables", () => {
  it("fixture: the transcription is whole (63 messages, 11 enums, 3 services)", () => {
    // A guard against an emptied fixture making every check below vacuous.
    expect(Object.keys(contract.messages)).toHaveLength(63);
    expect(Object.keys(contract.enums)).toHaveLength(11);
    expect(Object.keys(contract.services)).toEqual(["Sessions", "Harness", "HarnessRegistry"]);
  });

  it("messages: every message of ours is the contract's, and every contract message is ours", () => {
    const ours = allMessages().map((m) => local(m.typeName));
    for (const m of allMessages()) expect(m.typeName.startsWith(PACKAGE), m.typeName).toBe(true);
    expect([...ours].sort()).toEqual(Object.keys(contract.messages).sort());
  });

  it("fields: each message has exactly the contract's fields (number, name, type, label), no more", () => {
    for (const m of allMessages()) {
      const name = local(m.typeName);
      const actual = m.fields.map((f) => [f.number, f.name, typeOf(f), labelOf(f)] as Field);
      expect(byNumber(actual), name).toEqual(byNumber(contract.messages[name]!.fields));
    }
  });

  it("reserved: exactly the numbers the contract reserves, on the messages it names", () => {
    for (const m of allMessages()) {
      const reserved = m.proto.reservedRange.flatMap((r) => Array.from({ length: r.end - r.start }, (_, i) => r.start + i));
      expect(reserved, local(m.typeName)).toEqual(contract.messages[local(m.typeName)]!.reserved ?? []);
    }
  });

  it("enums: every enum and value of ours is the contract's, and every contract value is ours", () => {
    const ours = Object.fromEntries(allEnums().map((e) => [local(e.typeName), e.values.map((v) => [v.name, v.number])]));
    expect(ours).toEqual(contract.enums);
  });

  it("services: every method of ours is the contract's (request, response, streaming), and none is missing", () => {
    const ours = Object.fromEntries(
      FILES.flatMap((f) => f.services).map((s) => [
        local(s.typeName),
        s.methods.map((m) => [m.name, local(m.input.typeName), local(m.output.typeName), m.methodKind.replace("_", "-")]),
      ]),
    );
    expect(ours).toEqual(contract.services);
  });
});
