/**
 * Strict numbers (docs/contract.md §4, docs/security.md "Strict numbers"): the numeric fields of
 * requests and harness events this host gives meaning to, the values each allows, and the checks
 * the Worker (every RPC) and the tunnel (every harness event) run before anything reads them.
 *
 * Two kinds of check, one rule table:
 * - `numberViolation`: a decoded message's values, whatever the encoding (a negative seq or count
 *   is refused, never read as "the default");
 * - `jsonNumberFormViolation`: the JSON text's forms. proto3-JSON writes an integer as a decimal
 *   number or a decimal string; the parser also takes "0x10", "1e1", " 7" or 10.0 and gives them a
 *   value, so those forms are refused before it runs, in every integer field (rule or not).
 *
 * Shared by server and clients (the CLI can check before it sends). Tested in
 * test/node/proto/numbers.test.ts, and swept by the fuzz suite's oracle (test/node/fuzz).
 */
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";

export interface NumberRule {
  min: bigint;
  max?: bigint;
  /** What the smallest value means, when it has a meaning of its own ("0 for the head"). */
  zero?: string;
}

/** Keyed `<message type>.<field name>` (proto names). */
export const NUMBER_RULES: Readonly<Record<string, NumberRule>> = {
  // Sessions requests.
  "agentsessions.v1.ListSessionsRequest.page_size": { min: 0n, zero: "0 for the default of 50; above 500 reads as 500" },
  "agentsessions.v1.ExecRequest.resume_from_seq": { min: 0n },
  "agentsessions.v1.ExecRequest.expected_last_seq": { min: 0n, zero: "0 for a session with no records yet" },
  "agentsessions.v1.ExecRequest.deadline_unix": { min: 0n, zero: "0 for no deadline" },
  "agentsessions.v1.ReplayRequest.from_seq": { min: 0n, zero: "0 or 1 for the first record" },
  "agentsessions.v1.ReplayRequest.to_seq": { min: 0n, zero: "0 for the head" },
  "agentsessions.v1.ForkRequest.at_seq": { min: 0n, zero: "0 for the head" },
  "agentsessions.v1.ForkRequest.count": { min: 0n, zero: "0 for one child" },
  "agentsessions.v1.ApproveRequest.request_seq": { min: 1n },
  // Our extensions' requests.
  "agentsessions.edge.v1.TailRequest.from_seq": { min: 0n, zero: "0 or 1 for the first record" },
  // HarnessRegistry requests.
  "agentsessions.v1.ListHarnessesRequest.page_size": { min: 0n, zero: "0 for the default of 50; above 500 reads as 500" },
  // What a client may send inside a Session (CreateSession) or a message (Exec inputs).
  "agentsessions.v1.ResourceMetadata.version": { min: 0n },
  "agentsessions.v1.Event.schema_version": { min: 0n },
  "agentsessions.v1.Session.last_seq": { min: 0n },
  "agentsessions.v1.Session.fork_seq": { min: 0n },
  "agentsessions.v1.ComputeRef.fence_token": { min: 0n },
  "agentsessions.v1.ReasoningPart.ordinal": { min: 0n },
  "agentsessions.v1.ToolResult.approval_request_seq": { min: 0n },
  "agentsessions.v1.ToolResult.approval_decision_seq": { min: 0n },
  // What a harness may send in its events (the tunnel).
  "agentsessions.v1.Usage.input_tokens": { min: 0n },
  "agentsessions.v1.Usage.output_tokens": { min: 0n },
  "agentsessions.v1.Usage.reasoning_tokens": { min: 0n },
  "agentsessions.v1.ApprovalResult.request_seq": { min: 0n },
  "agentsessions.v1.ApprovalRef.request_seq": { min: 0n },
  "agentsessions.v1.ExecutionStart.resume_from_seq": { min: 0n },
  "agentsessions.v1.ExecutionStart.input_count": { min: 0n },
};

const INTEGER_TYPES = new Set([
  ScalarType.INT32,
  ScalarType.INT64,
  ScalarType.UINT32,
  ScalarType.UINT64,
  ScalarType.SINT32,
  ScalarType.SINT64,
  ScalarType.FIXED32,
  ScalarType.FIXED64,
  ScalarType.SFIXED32,
  ScalarType.SFIXED64,
]);

/** How far into a message the checks look: deeper nesting is the Struct-depth limit's to refuse. */
const MAX_DEPTH = 64;

function isIntegerField(f: DescField): boolean {
  return (f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar")) && INTEGER_TYPES.has(f.scalar!);
}

function describeRule(r: NumberRule): string {
  const range = r.max === undefined ? `${r.min} or more` : `between ${r.min} and ${r.max}`;
  return r.zero ? `${range} (${r.zero})` : range;
}

/**
 * The first field of `message` whose value its rule does not allow, as a message that names the
 * field and the range; undefined when every value is allowed. Only the fields that hold a rule, or
 * a message that can hold one at some depth, are read (planOf): a tool call's arguments or a
 * text part are never walked.
 */
export function numberViolation(schema: DescMessage, message: object): string | undefined {
  const stack: [DescMessage, Record<string, unknown>, string, number][] = [[schema, message as Record<string, unknown>, "", 0]];
  while (stack.length > 0) {
    const [desc, msg, path, depth] = stack.pop()!;
    if (depth > MAX_DEPTH) continue;
    for (const { field: f, rule } of planOf(desc)) {
      const raw = f.oneof ? oneofValue(msg[f.oneof.localName], f.localName) : msg[f.localName];
      if (raw === undefined || raw === null) continue;
      const at = path ? `${path}.${f.name}` : f.name;
      if (rule) {
        const values = Array.isArray(raw) ? raw : [raw];
        for (const v of values) {
          const n = typeof v === "bigint" ? v : BigInt(v as number);
          if (n < rule.min || (rule.max !== undefined && n > rule.max)) return `${at} must be ${describeRule(rule)}, got ${n}`;
        }
        continue;
      }
      if (f.fieldKind === "message") stack.push([f.message, raw as Record<string, unknown>, at, depth + 1]);
      else if (f.fieldKind === "list" && f.listKind === "message")
        (raw as object[]).forEach((e, i) => stack.push([f.message, e as Record<string, unknown>, `${at}[${i}]`, depth + 1]));
      else if (f.fieldKind === "map" && f.mapKind === "message") {
        for (const [k, e] of Object.entries(raw as object)) stack.push([f.message, e as Record<string, unknown>, `${at}[${k}]`, depth + 1]);
      }
    }
  }
  return undefined;
}

/** A field numberViolation reads: an integer field with its rule, or a message field whose type can hold one. */
interface Step {
  field: DescField;
  rule?: NumberRule;
}

const plans = new WeakMap<DescMessage, Step[]>();

/** The fields of `desc` that numberViolation reads, in field order (so the first violation found is the same). */
function planOf(desc: DescMessage): Step[] {
  let plan = plans.get(desc);
  if (plan) return plan;
  plan = [];
  for (const f of desc.fields) {
    if (isIntegerField(f)) {
      const rule = ruleOf(desc, f);
      if (rule) plan.push({ field: f, rule });
      continue;
    }
    const m = messageOf(f);
    if (m && holdsRule(m)) plan.push({ field: f });
  }
  plans.set(desc, plan);
  return plan;
}

/** The rule of `desc`'s field `f`, if the table has one. */
function ruleOf(desc: DescMessage, f: DescField): NumberRule | undefined {
  return NUMBER_RULES[`${desc.typeName}.${f.name}`];
}

/** The message type of a message, list-of-message or map-of-message field. */
function messageOf(f: DescField): DescMessage | undefined {
  if (f.fieldKind === "message") return f.message;
  if (f.fieldKind === "list" && f.listKind === "message") return f.message;
  if (f.fieldKind === "map" && f.mapKind === "message") return f.message;
  return undefined;
}

const holds = new WeakMap<DescMessage, boolean>();

/**
 * Whether a message of type `root` can hold a field with a rule at some depth. Types may nest
 * themselves (Struct, Value), so it is decided for every type reachable from `root` at once: a
 * type holds a rule when a field of its own has one, or a message field's type holds one,
 * repeated until nothing changes.
 */
function holdsRule(root: DescMessage): boolean {
  const known = holds.get(root);
  if (known !== undefined) return known;
  const types: DescMessage[] = [];
  const seen = new Set<DescMessage>();
  for (const visit = [root]; visit.length > 0; ) {
    const d = visit.pop()!;
    if (seen.has(d) || holds.has(d)) continue;
    seen.add(d);
    types.push(d);
    for (const f of d.fields) {
      const m = messageOf(f);
      if (m) visit.push(m);
    }
  }
  const now = new Map<DescMessage, boolean>();
  for (const d of types)
    now.set(
      d,
      d.fields.some((f) => isIntegerField(f) && ruleOf(d, f) !== undefined),
    );
  const held = (m: DescMessage) => now.get(m) ?? holds.get(m) === true;
  for (let changed = true; changed; ) {
    changed = false;
    for (const d of types) {
      if (
        now.get(d) ||
        !d.fields.some((f) => {
          const m = messageOf(f);
          return m !== undefined && held(m);
        })
      )
        continue;
      now.set(d, true);
      changed = true;
    }
  }
  for (const [d, h] of now) holds.set(d, h);
  return holds.get(root)!;
}

/** A JSON number whose source text is not a plain decimal integer (the reviver saw "1e1", "10.0"). */
class NumberForm {
  constructor(readonly source: string) {}
}

const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/;

/**
 * Parses JSON keeping the source text of every number that is not written as a plain decimal
 * integer, where the runtime tells it (JSON.parse source text access: workerd has it; on a
 * runtime without it only string forms are checked). Throws what JSON.parse throws.
 */
export function parseJsonKeepingNumberForms(text: string): unknown {
  return JSON.parse(text, (_key, value, context?: { source?: string }) =>
    typeof value === "number" && context?.source !== undefined && !DECIMAL_INTEGER.test(context.source) ? new NumberForm(context.source) : value,
  );
}

/**
 * The first integer field of a proto3-JSON value (as `parseJsonKeepingNumberForms` returns it)
 * written in a form the contract does not define: a string that is not a decimal integer ("0x10",
 * "1e1", "+7", " 7", "10.0"), or a number written with an exponent or a fraction. Fields named by
 * their JSON name or proto name are both found, as the parser accepts both.
 */
export function jsonNumberFormViolation(schema: DescMessage, json: unknown): string | undefined {
  const stack: [DescMessage, unknown, string, number][] = [[schema, json, "", 0]];
  while (stack.length > 0) {
    const [desc, value, path, depth] = stack.pop()!;
    if (depth > MAX_DEPTH || value === null || typeof value !== "object" || Array.isArray(value) || value instanceof NumberForm) continue;
    if (desc.typeName.startsWith("google.protobuf.")) continue;
    const obj = value as Record<string, unknown>;
    for (const f of desc.fields) {
      const raw = obj[f.jsonName] ?? obj[f.name];
      if (raw === undefined || raw === null) continue;
      const at = path ? `${path}.${f.name}` : f.name;
      if (isIntegerField(f)) {
        for (const v of Array.isArray(raw) ? raw : [raw]) {
          const bad = v instanceof NumberForm ? v.source : typeof v === "string" && !DECIMAL_INTEGER.test(v) ? JSON.stringify(v) : undefined;
          if (bad !== undefined) return `${at} is written ${bad.slice(0, 40)}: write integers as plain decimal numbers (e.g. 16)`;
        }
        continue;
      }
      if (f.fieldKind === "message") stack.push([f.message, raw, at, depth + 1]);
      else if (f.fieldKind === "list" && f.listKind === "message" && Array.isArray(raw))
        raw.forEach((e, i) => stack.push([f.message, e, `${at}[${i}]`, depth + 1]));
      else if (f.fieldKind === "map" && f.mapKind === "message" && typeof raw === "object") {
        for (const [k, e] of Object.entries(raw as object)) stack.push([f.message, e, `${at}[${k}]`, depth + 1]);
      }
    }
  }
  return undefined;
}

function oneofValue(o: unknown, name: string): unknown {
  const sel = o as { case?: string; value?: unknown } | undefined;
  return sel?.case === name ? sel.value : undefined;
}
