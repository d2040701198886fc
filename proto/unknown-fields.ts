/**
 * Unknown fields (protobuf-es keeps them in `$unknown`) found and dropped by walking a message
 * with its schema: only message-typed fields are visited, so JSON held in a google.protobuf.Struct
 * field is data and is never touched (a tool argument named "$unknown" is an argument). The walk
 * for each message type is worked out once. Used by the journal's normal form (proto/normalize.ts).
 */
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { heldAsJson, WRAPPER_TYPES } from "./local-forms.js";

type Msg = Record<string, unknown>;
/** Calls `visit` on every message directly inside `msg` (its message fields, lists, maps, oneofs). */
type Children = (msg: Msg, visit: (desc: DescMessage, child: Msg) => void) => void;

const walks = new WeakMap<DescMessage, Children>();

/** Whether `msg` or any message inside it carries unknown fields. */
export function hasUnknownFields(desc: DescMessage, msg: object): boolean {
  let found = false;
  const visit = (d: DescMessage, m: Msg) => {
    if (found) return;
    if (m.$unknown !== undefined && (m.$unknown as unknown[]).length > 0) {
      found = true;
      return;
    }
    childrenOf(d)(m, visit);
  };
  visit(desc, msg as Msg);
  return found;
}

/** Removes the unknown fields of `msg` and of every message inside it, in place. */
export function dropUnknownFields(desc: DescMessage, msg: object): void {
  const visit = (d: DescMessage, m: Msg) => {
    if ("$unknown" in m) delete m.$unknown;
    childrenOf(d)(m, visit);
  };
  visit(desc, msg as Msg);
}

function childrenOf(desc: DescMessage): Children {
  let walk = walks.get(desc);
  if (!walk) {
    const steps = desc.fields.filter(holdsMessages).map(stepOf);
    walk =
      steps.length === 0
        ? () => undefined
        : (msg, visit) => {
            for (const s of steps) s(msg, visit);
          };
    walks.set(desc, walk);
  }
  return walk;
}

/** A field whose values are protobuf messages as protobuf-es holds them (not Struct JSON, not a bare wrapper). */
function holdsMessages(f: DescField): boolean {
  const m =
    f.fieldKind === "message"
      ? f.message
      : f.fieldKind === "list" && f.listKind === "message"
        ? f.message
        : f.fieldKind === "map" && f.mapKind === "message"
          ? f.message
          : undefined;
  if (!m) return false;
  if (heldAsJson(m, f.parent)) return false;
  return !(f.fieldKind === "message" && !f.oneof && WRAPPER_TYPES.has(m.typeName));
}

function stepOf(f: DescField): (msg: Msg, visit: (desc: DescMessage, child: Msg) => void) => void {
  const desc = f.message!;
  const name = f.localName;
  if (f.oneof) {
    const group = f.oneof.localName;
    return (msg, visit) => {
      const sel = msg[group] as { case?: string; value?: Msg } | undefined;
      if (sel?.case === name && sel.value) visit(desc, sel.value);
    };
  }
  if (f.fieldKind === "list") {
    return (msg, visit) => {
      for (const item of (msg[name] as Msg[] | undefined) ?? []) visit(desc, item);
    };
  }
  if (f.fieldKind === "map") {
    return (msg, visit) => {
      const map = (msg[name] as Record<string, Msg> | undefined) ?? {};
      for (const k of Object.keys(map)) visit(desc, map[k]!);
    };
  }
  return (msg, visit) => {
    const v = msg[name] as Msg | undefined;
    if (v !== undefined && v !== null) visit(desc, v);
  };
}
