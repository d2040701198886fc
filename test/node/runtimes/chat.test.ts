/**
 * The built-in `chat` harness (runtimes/builtin/chat.ts, docs/behaviour.md §7.3) run against a recording
 * sink: what conversation it sends, with which model, and how its config fails.
 */
import { clone, create, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  EventKind,
  EventSchema,
  Lifecycle_Kind,
  MessageSchema,
  type Event,
  type Message,
  type ToolCall,
  type ToolResult,
  type Usage,
} from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { assistantText, textMessage, userText } from "../../../proto/messages.js";
import { type EventSink, type HarnessStart, type ModelRequest, sealedLength } from "../../../runtimes/harness-spi.js";
import { conversation, createChatHarness } from "../../../runtimes/builtin/chat.js";

/** A sink that records every call and answers model calls with a fixed assistant text. */
function recordingSink() {
  const calls: { method: keyof EventSink; arg: unknown }[] = [];
  const models: ModelRequest[] = [];
  const sink: EventSink = {
    async model(req) {
      calls.push({ method: "model", arg: req });
      models.push(req);
      return { message: assistantText("reply") };
    },
    async output(text: string) {
      calls.push({ method: "output", arg: text });
    },
    async toolCall(call: ToolCall): Promise<ToolResult> {
      calls.push({ method: "toolCall", arg: call });
      throw new Error("chat never calls tools");
    },
    async report(result: ToolResult) {
      calls.push({ method: "report", arg: result });
    },
    async usage(u: Usage) {
      calls.push({ method: "usage", arg: u });
    },
  };
  return { sink, calls, models };
}

function start(history: Event[], inputs: Message[], config = ""): HarnessStart {
  return {
    sessionUid: "sess-000000000000000000000001",
    executionId: "exec-current",
    config: new TextEncoder().encode(config),
    history,
    inputs,
    resumeFromSeq: 0n,
    signal: new AbortController().signal,
  };
}

const ev = {
  start: (id: string) =>
    create(EventSchema, { executionId: id, kind: EventKind.EVENT_EXECUTION_START, body: { case: "executionStart", value: { harness: "chat" } } }),
  input: (id: string, text: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText(text) } }),
  modelCall: (id: string, seen: Message[]) =>
    create(EventSchema, { executionId: id, kind: EventKind.EVENT_MODEL_CALL, body: { case: "model", value: { model: "m", messages: seen } } }),
  output: (id: string, text: string) =>
    create(EventSchema, { executionId: id, kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: assistantText(text) } }),
  usage: (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_USAGE, body: { case: "usage", value: { model: "m", inputTokens: 1n } } }),
  end: (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "completed" } } }),
  error: (id: string) =>
    create(EventSchema, { executionId: id, kind: EventKind.EVENT_ERROR, body: { case: "error", value: { code: 13, description: "model failed" } } }),
  lifecycle: (kind: Lifecycle_Kind) => create(EventSchema, { kind: EventKind.EVENT_LIFECYCLE, body: { case: "lifecycle", value: { kind, detail: "x" } } }),
};

/** Role and text of each message, for readable comparisons. */
function transcript(messages: Message[]): string[] {
  return messages.map((m) => `${m.role}: ${m.parts.map((p) => (p.part.case === "text" ? p.part.value.text : `<${p.part.case}>`)).join("")}`);
}

/** Two completed turns, a suspend/resume, then a failed turn, as the journal would hold them. */
function journal(): Event[] {
  return [
    ev.start("e1"),
    ev.input("e1", "q1"),
    ev.modelCall("e1", [userText("q1")]),
    ev.output("e1", "a1"),
    ev.usage("e1"),
    ev.end("e1"),
    ev.lifecycle(Lifecycle_Kind.LIFECYCLE_SUSPEND),
    ev.lifecycle(Lifecycle_Kind.LIFECYCLE_RESUME),
    ev.start("e2"),
    ev.input("e2", "q2a"),
    ev.input("e2", "q2b"),
    ev.modelCall("e2", [userText("from the model call")]),
    ev.output("e2", "a2"),
    ev.end("e2"),
    ev.start("e3"),
    ev.input("e3", "q3 (failed)"),
    ev.modelCall("e3", [userText("q3 (failed)")]),
    ev.error("e3"),
  ];
}

describe("chat harness", () => {
  it("run: sends history INPUT/OUTPUT messages in journal order, then the current inputs once", async () => {
    const { sink, models } = recordingSink();
    await createChatHarness().run(start(journal(), [userText("now-1"), userText("now-2")]), sink);
    expect(models).toHaveLength(1);
    expect(transcript(models[0]!.messages)).toEqual([
      "user: q1",
      "assistant: a1",
      "user: q2a",
      "user: q2b",
      "assistant: a2",
      // A failed turn's input stays in context, with no synthetic assistant reply after it.
      "user: q3 (failed)",
      "user: now-1",
      "user: now-2",
    ]);
  });

  it("run: only INPUT and OUTPUT events with a message body enter the context", async () => {
    // Decodable but odd records: the filter is on the kind and the body, not on either alone.
    const odd = [
      create(EventSchema, { kind: EventKind.EVENT_KIND_UNSPECIFIED, body: { case: "message", value: userText("unspecified kind") } }),
      create(EventSchema, { kind: EventKind.EVENT_PARKED, body: { case: "message", value: userText("parked kind") } }),
      create(EventSchema, { kind: EventKind.EVENT_OUTPUT }),
      create(EventSchema, { kind: EventKind.EVENT_INPUT, body: { case: "usage", value: { model: "m" } } }),
    ];
    const { sink, models } = recordingSink();
    await createChatHarness().run(start([ev.input("e1", "q1"), ...odd, ev.output("e1", "a1")], [userText("now")]), sink);
    expect(transcript(models[0]!.messages)).toEqual(["user: q1", "assistant: a1", "user: now"]);
  });

  it("run: puts the config's system prompt before the history", async () => {
    const { sink, models } = recordingSink();
    await createChatHarness().run(start(journal().slice(0, 6), [userText("now")], JSON.stringify({ system_prompt: "You are terse." })), sink);
    expect(transcript(models[0]!.messages)).toEqual(["system: You are terse.", "user: q1", "assistant: a1", "user: now"]);
  });

  it("run: with no history the conversation is just the current inputs", async () => {
    const { sink, models } = recordingSink();
    const inputs = [userText("first"), textMessage("user", "second")];
    await createChatHarness().run(start([], inputs), sink);
    expect(models[0]!.messages).toEqual(inputs);
  });

  it("run: forwards the config's model", async () => {
    const { sink, models } = recordingSink();
    await createChatHarness().run(start([], [userText("hi")], JSON.stringify({ model: "gpt-4o-mini" })), sink);
    expect(models[0]!.model).toBe("gpt-4o-mini");
  });

  it('run: asks for model "" when the config names none', async () => {
    for (const config of ["", "{}", JSON.stringify({ system_prompt: "p" })]) {
      const { sink, models } = recordingSink();
      await createChatHarness({ models: ["gpt-x"] }).run(start([], [userText("hi")], config), sink);
      expect(models[0]!.model).toBe("");
    }
  });

  it("run: makes exactly one model call and no other sink call", async () => {
    const { sink, calls } = recordingSink();
    await createChatHarness().run(start(journal(), [userText("hi")]), sink);
    expect(calls.map((c) => c.method)).toEqual(["model"]);
  });

  it("run: a non-JSON config fails with a clear message before any model call", async () => {
    const { sink, calls } = recordingSink();
    await expect(createChatHarness().run(start([], [userText("hi")], "system_prompt: hi"), sink)).rejects.toThrow(/chat config must be a JSON object/);
    expect(calls).toEqual([]);
  });

  it("run: a JSON config that is not an object fails with a clear message", async () => {
    const { sink, calls } = recordingSink();
    await expect(createChatHarness().run(start([], [userText("hi")], '["a"]'), sink)).rejects.toThrow(/chat config must be a JSON object/);
    expect(calls).toEqual([]);
  });

  it("run: a non-string system_prompt fails with a clear message before any model call", async () => {
    const { sink, calls } = recordingSink();
    await expect(createChatHarness().run(start([], [userText("hi")], JSON.stringify({ system_prompt: 42 })), sink)).rejects.toThrow(
      /system_prompt must be a string/,
    );
    expect(calls).toEqual([]);
  });

  it("run: a non-string model fails with a clear message before any model call", async () => {
    const { sink, calls } = recordingSink();
    await expect(createChatHarness().run(start([], [userText("hi")], JSON.stringify({ model: 4 })), sink)).rejects.toThrow(/model must be a string/);
    expect(calls).toEqual([]);
  });

  it("describe: declares id chat, a version, STATELESS_REPLAY, fork safety and the given models", async () => {
    const d = await createChatHarness({ models: ["gpt-x"] }).describe();
    expect(d.id).toBe("chat");
    expect(d.version).not.toBe("");
    expect(d.models).toEqual(["gpt-x"]);
    expect(d.capabilities?.resumability).toBe(Resumability.STATELESS_REPLAY);
    expect(d.capabilities?.forkSafe).toBe(true);
  });
});

describe("chat conversation, continued turn by turn", () => {
  it("conversation: a history that grows turn by turn (same event objects) gives what a history of fresh copies gives, tool calls and results included", () => {
    const events: Event[] = [];
    const ev = (kind: EventKind, body: { case: string; value: unknown }) => create(EventSchema, { executionId: "e", kind, body: body as never });
    const fresh = (h: Event[]) => h.map((e) => clone(EventSchema, e));
    const start = (history: Event[]): HarnessStart =>
      ({
        sessionUid: "s",
        executionId: "e",
        config: new Uint8Array(),
        history,
        inputs: [userText("now")],
        resumeFromSeq: 0n,
        signal: new AbortController().signal,
      }) as HarnessStart;
    for (let turn = 0; turn < 60; turn++) {
      events.push(ev(EventKind.EVENT_INPUT, { case: "message", value: userText(`q${turn}`) }));
      if (turn % 3 === 0) {
        // The model calls a tool; the result is recorded on some turns only (an unanswered call otherwise).
        events.push(
          ev(EventKind.EVENT_OUTPUT, {
            case: "message",
            value: create(MessageSchema, { role: "assistant", parts: [{ part: { case: "toolCall", value: { id: `c${turn}`, tool: "look" } } }] }),
          }),
        );
        if (turn % 2 === 0)
          events.push(
            ev(EventKind.EVENT_TOOL_RESULT, { case: "result", value: { id: `c${turn}`, content: [{ part: { case: "text", value: { text: "r" } } }] } }),
          );
      }
      events.push(ev(EventKind.EVENT_OUTPUT, { case: "message", value: assistantText(`a${turn}`) }));
      const config = turn % 5 === 0 ? { system_prompt: "be brief" } : {};
      const continued = conversation(start(events.slice()), config);
      const rebuilt = conversation(start(fresh(events)), config);
      expect(continued.map((m) => toJson(MessageSchema, m))).toEqual(rebuilt.map((m) => toJson(MessageSchema, m)));
    }
  });

  it("conversation: the next turn continues the same array, what its history says sealed, the last turn's own messages replaced", () => {
    const history: Event[] = [ev.input("e1", "q1"), ev.output("e1", "a1")];
    const first = conversation(start(history.slice(), [userText("q2")]), { system_prompt: "be brief" });
    expect(transcript(first)).toEqual(["system: be brief", "user: q1", "assistant: a1", "user: q2"]);
    expect(sealedLength(first)).toBe(3);
    // The turn's steps push onto it (a tool step); the journal then records the turn differently.
    first.push(assistantText("a step the next turn's history does not say"));
    history.push(ev.input("e2", "q2"), ev.output("e2", "a2"));
    const second = conversation(start(history.slice(), [userText("q3")]), { system_prompt: "be brief" });
    expect(second).toBe(first);
    expect(transcript(second)).toEqual(["system: be brief", "user: q1", "assistant: a1", "user: q2", "assistant: a2", "user: q3"]);
    expect(sealedLength(second)).toBe(5);
    // The same turn again (a recovery in the same object) gets the same conversation.
    expect(transcript(conversation(start(history.slice(), [userText("q3")]), { system_prompt: "be brief" }))).toEqual(transcript(second));
    // A changed system prompt starts a chain of its own.
    const other = conversation(start(history.slice(), [userText("q3")]), { system_prompt: "be long" });
    expect(other).not.toBe(second);
    expect(transcript(other)[0]).toBe("system: be long");
    expect(transcript(other).slice(1)).toEqual(transcript(second).slice(1));
  });

  it("conversation: a session of 300,000 messages without compaction is handed whole (more than a call's arguments)", () => {
    const history = Array.from({ length: 300_000 }, (_, i) =>
      create(EventSchema, {
        executionId: `e${i >> 1}`,
        kind: i % 2 ? EventKind.EVENT_OUTPUT : EventKind.EVENT_INPUT,
        body: { case: "message", value: userText(`m${i}`) },
      }),
    );
    const start = { history, inputs: [userText("now")] } as unknown as HarnessStart;
    const messages = conversation(start, { system_prompt: "be brief" });
    expect(messages.length).toBe(300_002);
    expect(messages[1]).toBe(history[0]!.body.value);
    expect(messages.at(-2)).toBe(history.at(-1)!.body.value);
    expect(messages.at(-1)).toEqual(userText("now"));
  });
});
