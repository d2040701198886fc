/**
 * Strict numbers (proto/numbers.ts; issue 11 §4): the rule table, the value check and the JSON
 * form check, in process. Against a real host: test/node/integration/strict-numbers.test.ts and
 * the fuzz suite's oracle.
 */
import { create, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Audit } from "../../../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { Tail } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { HarnessMessageSchema } from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { HarnessRegistry } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { EventSchema, MessageSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecRequestSchema, ForkRequestSchema, ReplayRequestSchema, Sessions } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { jsonNumberFormViolation, NUMBER_RULES, numberViolation } from "../../../proto/numbers.js";

const INTEGERS = new Set([ScalarType.INT32, ScalarType.INT64, ScalarType.UINT32, ScalarType.UINT64, ScalarType.SINT32, ScalarType.SINT64]);

/** Every integer field reachable from `root`, as `<type>.<field>`. */
function integerFields(root: DescMessage): Set<string> {
  const out = new Set<string>();
  const seen = new Set<string>();
  const walk = (m: DescMessage) => {
    if (seen.has(m.typeName) || m.typeName.startsWith("google.protobuf.")) return;
    seen.add(m.typeName);
    for (const f of m.fields) {
      if ((f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar")) && INTEGERS.has(f.scalar!)) out.add(`${m.typeName}.${f.name}`);
      if (f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message") || (f.fieldKind === "map" && f.mapKind === "message"))
        walk(f.message!);
    }
  };
  walk(root);
  return out;
}

/**
 * Integer fields that carry no meaning this host acts on, so any value is allowed: a new field
 * must be given a rule or be listed here with the reason (the sweep below fails otherwise).
 */
const UNCONSTRAINED = new Map([
  ["agentsessions.v1.Error.code", "a harness's own error code, recorded as given"],
  ["agentsessions.edge.v1.Hello.max_streams", "uint32: every value is a stream count (0: no limit)"],
]);

describe("strict numbers", () => {
  it("rules: every rule (and every stated exception) names an integer field that exists", () => {
    const all = new Set([...Sessions.methods, ...HarnessRegistry.methods, ...Audit.methods, ...Tail.methods].flatMap((m) => [...integerFields(m.input)]));
    for (const f of integerFields(EventSchema)) all.add(f);
    for (const f of integerFields(HarnessMessageSchema)) all.add(f);
    for (const key of [...Object.keys(NUMBER_RULES), ...UNCONSTRAINED.keys()]) expect(all, key).toContain(key);
  });

  it("sweep: every integer field of every request (Sessions, HarnessRegistry, Audit, Tail) and every harness message has a rule or a stated reason to have none", () => {
    const roots = [...Sessions.methods, ...HarnessRegistry.methods, ...Audit.methods, ...Tail.methods].map((m) => m.input);
    roots.push(HarnessMessageSchema);
    const missing = [...new Set(roots.flatMap((r) => [...integerFields(r)]))].filter((f) => !NUMBER_RULES[f] && !UNCONSTRAINED.has(f));
    expect(missing).toEqual([]);
  });

  it("numberViolation: a negative seq or count names the field and the allowed range; 0 and positive values pass", () => {
    expect(numberViolation(ForkRequestSchema, create(ForkRequestSchema, { count: -1 }))).toBe("count must be 0 or more (0 for one child), got -1");
    expect(numberViolation(ForkRequestSchema, create(ForkRequestSchema, { atSeq: -1n }))).toBe("at_seq must be 0 or more (0 for the head), got -1");
    expect(numberViolation(ReplayRequestSchema, create(ReplayRequestSchema, { fromSeq: -5n, toSeq: -2n }))).toMatch(/^(from|to)_seq must be 0 or more/);
    expect(numberViolation(ForkRequestSchema, create(ForkRequestSchema, { count: 0, atSeq: 0n }))).toBeUndefined();
    expect(numberViolation(ForkRequestSchema, create(ForkRequestSchema, { count: 3, atSeq: 9n }))).toBeUndefined();
  });

  it("numberViolation: nested values in events are found with their path", () => {
    const ev = create(EventSchema, { body: { case: "usage", value: { model: "m", inputTokens: 3n, outputTokens: -1n } } });
    expect(numberViolation(EventSchema, ev)).toBe("usage.output_tokens must be 0 or more, got -1");
  });

  it("numberViolation: reads only what can hold a rule, so a tool call's arguments are never walked, and finds what can", () => {
    // Any read of these arguments throws: the check must not look inside a Struct.
    const untouchable = new Proxy(
      {},
      {
        get: () => {
          throw new Error("the tool call's arguments were read");
        },
        ownKeys: () => {
          throw new Error("the tool call's arguments were listed");
        },
      },
    );
    const input = create(MessageSchema, {
      parts: [
        { part: { case: "text", value: { text: "hi" } } },
        { part: { case: "toolCall", value: { id: "c1", tool: "t" } } },
        { part: { case: "toolResult", value: { id: "c1", approvalRequestSeq: -2n } } },
      ],
    });
    (input.parts[1]!.part.value as { args: unknown }).args = untouchable;
    const req = create(ExecRequestSchema, { session: "sess-000000000000000000000000", inputs: [input] });
    expect(numberViolation(ExecRequestSchema, req)).toBe("inputs[0].parts[2].tool_result.approval_request_seq must be 0 or more, got -2");
    (input.parts[2]!.part.value as { approvalRequestSeq: bigint }).approvalRequestSeq = 0n;
    expect(numberViolation(ExecRequestSchema, req)).toBeUndefined();
  });

  it("jsonNumberFormViolation: hex, exponent, sign and padded strings are refused in any integer field; decimal numbers and strings pass", () => {
    const check = (json: unknown) => jsonNumberFormViolation(ForkRequestSchema, json);
    for (const bad of ["0x10", "1e1", "+3", " 7", "7 ", "10.0", "016", "-0x1"]) expect(check({ count: bad }), bad).toMatch(/^count is written/);
    expect(check({ atSeq: "1e1" })).toMatch(/^at_seq is written "1e1"/);
    expect(check({ at_seq: "0x10" })).toMatch(/^at_seq is written/);
    for (const ok of [16, "16", 0, "-4", -4]) expect(check({ count: ok }), String(ok)).toBeUndefined();
  });
});
