/**
 * The normal form of a journaled Event (docs/contract.md §7.3, "Go-normal form").
 *
 * What is hashed is exactly what is stored and served, and a verifier that decodes the stored bytes
 * and re-hashes must get the same answer. So every event is normalized once, before it is hashed and
 * stored: empty actor dropped, ModelCall stripped to model/params/input_hash/id, empty oneof sources
 * collapsed, unknown enum numbers of EventKind/Mediation/Lifecycle.Kind collapsed to 0, unknown fields
 * dropped. Used by the journal append path; tested in test/node/proto/normalize.test.ts.
 */
import { clone, create } from "@bufbuild/protobuf";
import { dropUnknownFields, hasUnknownFields } from "./unknown-fields.js";
import {
  EventKind,
  EventSchema,
  Lifecycle_Kind,
  Mediation,
  ModelCallSchema,
  PartSchema,
  type Event,
  type Message,
  type Part,
  type ToolCall,
  type ToolResult,
} from "./gen/agentsessions/v1/common_pb.js";

const EVENT_KINDS = new Set<number>(Object.values(EventKind).filter((v) => typeof v === "number") as number[]);
const MEDIATIONS = new Set<number>(Object.values(Mediation).filter((v) => typeof v === "number") as number[]);
const LIFECYCLE_KINDS = new Set<number>(Object.values(Lifecycle_Kind).filter((v) => typeof v === "number") as number[]);

/**
 * Returns the event in normal form, never modifying the input: the input itself when it already is
 * (the common case on the append path, which then skips a deep copy), else a normalized copy.
 */
export function normalizeEvent(input: Event): Event {
  if (isNormal(input)) return input;
  const ev = clone(EventSchema, input);
  dropUnknownFields(EventSchema, ev);
  if (!EVENT_KINDS.has(ev.kind)) ev.kind = EventKind.EVENT_KIND_UNSPECIFIED;
  if (ev.actor && !ev.actor.principal && !ev.actor.issuer && !ev.actor.subject) ev.actor = undefined;
  const body = ev.body;
  switch (body.case) {
    case "message":
      normalizeMessage(body.value);
      break;
    case "model": {
      const m = body.value;
      ev.body = {
        case: "model",
        value: create(ModelCallSchema, { model: m.model, params: m.params, inputHash: m.inputHash, id: m.id }),
      };
      break;
    }
    case "tool":
      normalizeToolCall(body.value);
      break;
    case "result":
      normalizeToolResult(body.value);
      break;
    case "lifecycle":
      if (!LIFECYCLE_KINDS.has(body.value.kind)) body.value.kind = Lifecycle_Kind.LIFECYCLE_UNSPECIFIED;
      break;
    default:
      break;
  }
  return ev;
}

/** True when normalizeEvent would change nothing. */
export function isNormal(ev: Event): boolean {
  return !hasUnknownFields(EventSchema, ev) && isNormalShape(ev);
}

/**
 * isNormal but for unknown fields, which the caller finds another way: the journal's encoder
 * notes them while it writes the bytes (proto/binary-writer.ts), sparing a walk of its own.
 */
export function isNormalShape(ev: Event): boolean {
  if (!EVENT_KINDS.has(ev.kind)) return false;
  if (ev.actor && !ev.actor.principal && !ev.actor.issuer && !ev.actor.subject) return false;
  const body = ev.body;
  switch (body.case) {
    case "message":
      return body.value.parts.every(isNormalPart);
    case "model":
      return body.value.messages.length === 0 && body.value.tools.length === 0 && body.value.toolChoice === undefined;
    case "tool":
      return MEDIATIONS.has(body.value.mediation);
    case "result":
      return body.value.content.every(isNormalPart);
    case "lifecycle":
      return LIFECYCLE_KINDS.has(body.value.kind);
    default:
      return true;
  }
}

function isNormalPart(p: Part): boolean {
  const v = p.part;
  switch (v.case) {
    case "file":
      return !((v.value.source.case === "bytes" && v.value.source.value.length === 0) || (v.value.source.case === "uri" && v.value.source.value === ""));
    case "data":
      return v.value.data !== undefined;
    case "reasoning": {
      const o = v.value.opaque;
      if ((o.case === "opaqueBytes" && o.value.length === 0) || (o.case === "opaqueUri" && o.value === "")) return false;
      return v.value.summary.every(isNormalPart);
    }
    case "toolCall":
      return MEDIATIONS.has(v.value.mediation);
    case "toolResult":
      return v.value.content.every(isNormalPart);
    default:
      return true;
  }
}

function normalizeMessage(m: Message): void {
  m.parts = m.parts.map(normalizePart);
}

function normalizePart(p: Part): Part {
  const v = p.part;
  switch (v.case) {
    case "file": {
      const src = v.value.source;
      if (src.case === "bytes" && src.value.length === 0) v.value.source = { case: undefined };
      else if (src.case === "uri" && src.value === "") v.value.source = { case: undefined };
      return p;
    }
    case "data":
      // A DataPart whose struct is unset collapses to an empty Part.
      return v.value.data === undefined ? create(PartSchema, {}) : p;
    case "reasoning": {
      const r = v.value;
      if (r.opaque.case === "opaqueBytes" && r.opaque.value.length === 0) r.opaque = { case: undefined };
      else if (r.opaque.case === "opaqueUri" && r.opaque.value === "") r.opaque = { case: undefined };
      r.summary = r.summary.map(normalizePart);
      return p;
    }
    case "toolCall":
      normalizeToolCall(v.value);
      return p;
    case "toolResult":
      normalizeToolResult(v.value);
      return p;
    default:
      return p;
  }
}

function normalizeToolCall(c: ToolCall): void {
  if (!MEDIATIONS.has(c.mediation)) c.mediation = Mediation.UNSPECIFIED;
}

function normalizeToolResult(r: ToolResult): void {
  // Unknown ToolResult.Code numbers are preserved (docs/contract.md §7.3).
  r.content = r.content.map(normalizePart);
}

/** Unknown fields never reach the journal: a Go verifier's domain round trip drops them. */
