/**
 * What the host accepts as a host-executed tool call before it records the intent (docs/behaviour.md
 * §1.5): a host tier, an idempotency key, and arguments that are plain JSON. And the identity a
 * re-issued call must have on replay or recovery (checklist §8.12 #63-70).
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import canonicalize from "canonicalize";
import { Mediation, type ToolCall } from "../../proto/gen/agentsessions/v1/common_pb.js";

/** Deepest nesting of objects and arrays accepted in tool arguments. */
export const MAX_ARGS_DEPTH = 32;
const MAX_SAFE = 2 ** 53;

/** Why the host refuses to record this call, or undefined when it may. */
export function toolCallRefusal(call: ToolCall): { kind: "unmediated" | "missing_key" | "invalid_args"; detail: string } | undefined {
  if (call.mediation !== Mediation.CONTROLLER_MEDIATED && call.mediation !== Mediation.REQUIRES_APPROVAL) {
    return {
      kind: "unmediated",
      detail: `tool call ${call.tool || "(unnamed)"} is not host-mediated (mediation ${Mediation[call.mediation] ?? call.mediation}): report in-harness results with report()`,
    };
  }
  if (call.idempotencyKey === "")
    return { kind: "missing_key", detail: `tool call ${call.tool || "(unnamed)"} has no idempotency key, which host-executed calls require` };
  const bad = call.args === undefined ? undefined : argsProblem(call.args, 1);
  if (bad) return { kind: "invalid_args", detail: `tool call ${call.tool || "(unnamed)"} has arguments that are not plain JSON: ${bad}` };
  return undefined;
}

function argsProblem(v: JsonValue, depth: number): string | undefined {
  if (depth > MAX_ARGS_DEPTH) return `nesting deeper than ${MAX_ARGS_DEPTH}`;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return "a NaN or infinite number";
    if (Number.isInteger(v) && Math.abs(v) > MAX_SAFE) return "an integer beyond 2^53";
    return undefined;
  }
  if (v === null || typeof v !== "object") return undefined;
  for (const x of Array.isArray(v) ? v : Object.values(v as JsonObject)) {
    const p = argsProblem(x, depth + 1);
    if (p) return p;
  }
  return undefined;
}

/** The identity a re-issued call must match: id, tool, mediation, key and arguments (absent ≠ {}). */
export function toolCallIdentity(call: ToolCall): string {
  let args: string;
  try {
    args = call.args === undefined ? "absent" : (canonicalize(call.args) ?? "absent");
  } catch {
    args = "unrepresentable";
  }
  return JSON.stringify([call.id, call.tool, call.mediation, call.idempotencyKey, args]);
}
