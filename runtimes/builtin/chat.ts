/**
 * The built-in `chat` harness (BEHAVIOUR.md §7.3): a stateless conversational agent.
 *
 * Each turn builds the conversation from history (INPUT and OUTPUT messages in journal order, so
 * inputs of failed turns stay in context) plus the current inputs, prepends the optional system
 * prompt from the per-execution JSON config, and makes one mediated model call. The model is the
 * config's `model`, else "" (the host resolves "" to the session's model or its default), so a
 * changed deployment default never changes what a recorded turn asked for.
 */
import { create } from "@bufbuild/protobuf";
import { EventKind, type Event, type Message } from "../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessDescriptorSchema, Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { textMessage } from "../../proto/messages.js";
import type { Harness, HarnessStart } from "../harness-spi.js";

export interface ChatConfig {
  system_prompt?: string;
  model?: string;
}

export function createChatHarness(opts: { models?: string[] } = {}): Harness {
  return {
    describe() {
      return create(HarnessDescriptorSchema, {
        id: "chat",
        version: "1",
        models: opts.models ?? [],
        capabilities: { resumability: Resumability.STATELESS_REPLAY, forkSafe: true, reasoningReplay: true },
      });
    },
    async run(start, sink) {
      const config = parseChatConfig(start.config);
      await sink.model({ model: config.model ?? "", messages: conversation(start, config) });
    },
  };
}

/** A non-JSON config fails the turn when the harness runs, as in the reference. */
export function parseChatConfig(bytes: Uint8Array): ChatConfig {
  if (bytes.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    throw new Error("chat config must be a JSON object, e.g. {\"system_prompt\": \"…\"}");
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("chat config must be a JSON object");
  const c = v as Record<string, unknown>;
  if (c.system_prompt !== undefined && typeof c.system_prompt !== "string") throw new Error("chat config system_prompt must be a string");
  if (c.model !== undefined && typeof c.model !== "string") throw new Error("chat config model must be a string");
  return { system_prompt: c.system_prompt as string | undefined, model: c.model as string | undefined };
}

/** System prompt, then prior INPUT/OUTPUT messages in journal order, then this turn's inputs once. */
export function conversation(start: HarnessStart, config: ChatConfig): Message[] {
  const out: Message[] = [];
  if (config.system_prompt) out.push(textMessage("system", config.system_prompt));
  for (const ev of start.history) if (isConversational(ev)) out.push((ev.body as { value: Message }).value);
  out.push(...start.inputs);
  return out;
}

function isConversational(ev: Event): boolean {
  return (ev.kind === EventKind.EVENT_INPUT || ev.kind === EventKind.EVENT_OUTPUT) && ev.body.case === "message";
}
