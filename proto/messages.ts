/**
 * Small constructors and readers for contract messages that every layer needs (harnesses, the
 * controller, the CLI's record printer).
 */
import { create } from "@bufbuild/protobuf";
import { EventKind, MessageSchema, type Event, type Message } from "./gen/agentsessions/v1/common_pb.js";

/** Concatenated text parts of a message ("" for none). */
export function textOf(m: Message | undefined): string {
  if (!m) return "";
  let s = "";
  for (const p of m.parts) if (p.part.case === "text") s += p.part.value.text;
  return s;
}

/**
 * The marks that reorder text on screen (the implicit direction marks, and the bidirectional
 * embeddings, overrides and isolates), as the inside of a regex character class: what agentctl
 * and the inspector show as escapes, so a record or an approval reads as it is.
 */
export const REORDERING_MARKS_CLASS = "\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069";

/**
 * At most `max` UTF-16 units of `s`, never cut between the halves of a surrogate pair: a cut
 * there would leave half an emoji, which the journal can only hold as U+FFFD.
 */
export function clipText(s: string, max: number): string {
  if (s.length <= max) return s;
  const last = s.charCodeAt(max - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

export function textMessage(role: string, text: string): Message {
  return create(MessageSchema, { role, parts: [{ part: { case: "text", value: { text } } }] });
}

export function userText(text: string): Message {
  return textMessage("user", text);
}

export function assistantText(text: string): Message {
  return textMessage("assistant", text);
}

/** `EVENT_OUTPUT` for EventKind.EVENT_OUTPUT; numbers without a name print as numbers. */
export function eventKindName(kind: EventKind): string {
  return EventKind[kind] ?? String(kind);
}

/** The message body of an INPUT/OUTPUT event, if any. */
export function eventMessage(ev: Event): Message | undefined {
  return ev.body.case === "message" ? ev.body.value : undefined;
}
