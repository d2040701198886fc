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
