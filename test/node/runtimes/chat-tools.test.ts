/**
 * The chat harness's agent loop with tools (runtimes/builtin/chat.ts; docs/behaviour.md §1.5, §7.3), run
 * against a recording sink whose model answers are scripted: which calls reach sink.toolCall and
 * how, what each next model request carries, the step bound, history with tool calls, and config
 * validation.
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  EventKind,
  EventSchema,
  Mediation,
  MessageSchema,
  ToolResultSchema,
  type Event,
  type Message,
  type ToolCall,
  type ToolResult,
} from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText, userText } from "../../../proto/messages.js";
import type { EventSink, HarnessStart, ModelRequest, ToolCallOptions } from "../../../runtimes/harness-spi.js";
import { createChatHarness, DEFAULT_MAX_STEPS, parseChatConfig } from "../../../runtimes/builtin/chat.js";

const EXEC = "exec-current";

/** An assistant message making the given tool calls (after optional text). */
function callsMessage(calls: { id: string; tool: string; args?: JsonObject }[], text = ""): Message {
  return create(MessageSchema, {
    role: "assistant",
    parts: [
      ...(text ? [{ part: { case: "text" as const, value: { text } } }] : []),
      ...calls.map((c) => ({ part: { case: "toolCall" as const, value: { id: c.id, tool: c.tool, args: c.args } } })),
    ],
  });
}

/**
 * A sink that records every call. model() answers from `answers` in order (the last one repeats);
 * toolCall() answers a receipt naming the tool and arguments it was given.
 */
function scriptedSink(answers: Message[]) {
  const calls: string[] = [];
  const models: ModelRequest[] = [];
  const toolCalls: { call: ToolCall; opts: ToolCallOptions | undefined }[] = [];
  const receipts: ToolResult[] = [];
  const sink: EventSink = {
    async model(req) {
      calls.push("model");
      // Snapshot: the harness keeps appending to the same array.
      models.push({ ...req, messages: [...req.messages] });
      return { message: answers[Math.min(models.length - 1, answers.length - 1)]! };
    },
    async output() {
      calls.push("output");
    },
    async toolCall(call, opts) {
      calls.push(`toolCall:${call.tool}`);
      toolCalls.push({ call, opts });
      const r = create(ToolResultSchema, {
        id: call.id,
        output: { tool: call.tool, args: call.args ?? null },
        content: [{ part: { case: "text", value: { text: `${call.tool} ok` } } }],
      });
      receipts.push(r);
      return r;
    },
    async report() {
      calls.push("report");
    },
    async usage() {
      calls.push("usage");
    },
  };
  return { sink, calls, models, toolCalls, receipts };
}

function start(config: unknown, history: Event[] = [], inputs: Message[] = [userText("go")]): HarnessStart {
  return {
    sessionUid: "sess-000000000000000000000001",
    executionId: EXEC,
    config: new TextEncoder().encode(config === undefined ? "" : JSON.stringify(config)),
    history,
    inputs,
    resumeFromSeq: 0n,
    signal: new AbortController().signal,
  };
}

/** Role plus a short form of each part: text, `call:<id>:<tool>`, `result:<id>[:error]`. */
function transcript(messages: Message[]): string[] {
  return messages.map(
    (m) =>
      `${m.role}: ` +
      m.parts
        .map((p) => {
          switch (p.part.case) {
            case "text":
              return p.part.value.text;
            case "toolCall":
              return `call:${p.part.value.id}:${p.part.value.tool}`;
            case "toolResult":
              return `result:${p.part.value.id}${p.part.value.isError ? ":error" : ""}`;
            default:
              return `<${p.part.case}>`;
          }
        })
        .join(" "),
  );
}

const tools = {
  lookup: { name: "lookup", description: "Finds a city", input_schema: { type: "object", properties: { city: { type: "string" } } } },
  pay: { name: "pay", mediation: "REQUIRES_APPROVAL", approval_timeout_seconds: 30 },
};

describe("agent loop", () => {
  it("run: each tool call goes to sink.toolCall at the tool's tier, keyed <execution>/<call id>, with its approval timeout", async () => {
    const { sink, calls, toolCalls } = scriptedSink([
      callsMessage([
        { id: "c1", tool: "lookup", args: { city: "Paris" } },
        { id: "c2", tool: "pay", args: { amount: 10 } },
      ]),
      assistantText("done"),
    ]);
    await createChatHarness().run(start({ tools: [tools.lookup, tools.pay] }), sink);
    expect(calls).toEqual(["model", "toolCall:lookup", "toolCall:pay", "model"]);
    expect(toolCalls[0]!.call).toMatchObject({
      id: "c1",
      tool: "lookup",
      args: { city: "Paris" },
      mediation: Mediation.CONTROLLER_MEDIATED,
      idempotencyKey: `${EXEC}/c1`,
    });
    expect(toolCalls[0]!.opts).toEqual({ approvalTimeoutSeconds: undefined });
    expect(toolCalls[1]!.call).toMatchObject({
      id: "c2",
      tool: "pay",
      args: { amount: 10 },
      mediation: Mediation.REQUIRES_APPROVAL,
      idempotencyKey: `${EXEC}/c2`,
    });
    expect(toolCalls[1]!.opts).toEqual({ approvalTimeoutSeconds: 30 });
  });

  it("run: an explicit CONTROLLER_MEDIATED tool is called at that tier", async () => {
    const { sink, toolCalls } = scriptedSink([callsMessage([{ id: "c1", tool: "lookup" }]), assistantText("done")]);
    await createChatHarness().run(start({ tools: [{ name: "lookup", mediation: "CONTROLLER_MEDIATED" }] }), sink);
    expect(toolCalls.map((t) => t.call.mediation)).toEqual([Mediation.CONTROLLER_MEDIATED]);
  });

  it("run: every model request offers the configured tools with their description and schema", async () => {
    const { sink, models } = scriptedSink([callsMessage([{ id: "c1", tool: "lookup" }]), assistantText("done")]);
    await createChatHarness().run(start({ model: "m-1", tools: [tools.lookup, tools.pay] }), sink);
    expect(models).toHaveLength(2);
    for (const m of models) {
      expect(m.model).toBe("m-1");
      expect(m.tools?.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }))).toEqual([
        { name: "lookup", description: "Finds a city", inputSchema: tools.lookup.input_schema },
        { name: "pay", description: "", inputSchema: { type: "object" } },
      ]);
    }
  });

  it("run: results come back as role tool messages after the assistant's call message in the next model request", async () => {
    const first = callsMessage(
      [
        { id: "c1", tool: "lookup" },
        { id: "c2", tool: "pay" },
      ],
      "checking",
    );
    const { sink, models, receipts } = scriptedSink([first, assistantText("done")]);
    await createChatHarness().run(start({ tools: [tools.lookup, tools.pay] }), sink);
    expect(transcript(models[0]!.messages)).toEqual(["user: go"]);
    expect(transcript(models[1]!.messages)).toEqual(["user: go", "assistant: checking call:c1:lookup call:c2:pay", "tool: result:c1", "tool: result:c2"]);
    expect(models[1]!.messages[1]).toEqual(first);
    const fed = models[1]!.messages.slice(2).map((m) => (m.parts[0]!.part.case === "toolResult" ? m.parts[0]!.part.value : undefined));
    expect(fed).toEqual(receipts);
  });

  it("run: an answer without tool calls ends the turn with no sink call after it", async () => {
    const { sink, calls } = scriptedSink([assistantText("plain")]);
    await createChatHarness().run(start({ tools: [tools.lookup] }), sink);
    expect(calls).toEqual(["model"]);
  });

  it("run: a call of an undeclared tool is not sent to the sink; an error result for it is fed back", async () => {
    const { sink, calls, models } = scriptedSink([
      callsMessage([
        { id: "u1", tool: "rm_rf" },
        { id: "c1", tool: "lookup" },
      ]),
      assistantText("sorry"),
    ]);
    await createChatHarness().run(start({ tools: [tools.lookup] }), sink);
    expect(calls).toEqual(["model", "toolCall:lookup", "model"]);
    expect(transcript(models[1]!.messages)).toEqual(["user: go", "assistant: call:u1:rm_rf call:c1:lookup", "tool: result:u1:error", "tool: result:c1"]);
    const unknown = models[1]!.messages[2]!.parts[0]!.part;
    expect(unknown.case === "toolResult" && unknown.value).toMatchObject({ id: "u1", isError: true, error: "unknown tool rm_rf" });
  });

  it("run: with no tools configured every tool call is unknown and nothing reaches the sink", async () => {
    const { sink, calls } = scriptedSink([callsMessage([{ id: "c1", tool: "lookup" }]), assistantText("ok")]);
    await createChatHarness().run(start(undefined), sink);
    expect(calls).toEqual(["model", "model"]);
  });

  it("run: a model still calling tools after max_steps model calls fails the run, and that last call is not executed", async () => {
    const { sink, models, toolCalls } = scriptedSink([callsMessage([{ id: "again", tool: "lookup" }])]);
    await expect(createChatHarness().run(start({ tools: [tools.lookup], max_steps: 3 }), sink)).rejects.toThrow(
      /still calling tools after 3 steps \(max_steps\)/,
    );
    expect(models).toHaveLength(3);
    expect(toolCalls).toHaveLength(2);
  });

  it("run: max_steps defaults to 8 model calls", async () => {
    const { sink, models } = scriptedSink([callsMessage([{ id: "again", tool: "lookup" }])]);
    await expect(createChatHarness().run(start({ tools: [tools.lookup] }), sink)).rejects.toThrow(/max_steps/);
    expect(DEFAULT_MAX_STEPS).toBe(8);
    expect(models).toHaveLength(8);
  });

  it("run: max_steps 1 allows one answer without tool calls", async () => {
    const { sink, models } = scriptedSink([assistantText("direct")]);
    await createChatHarness().run(start({ tools: [tools.lookup], max_steps: 1 }), sink);
    expect(models).toHaveLength(1);
  });
});

const ev = {
  start: (id: string) =>
    create(EventSchema, { executionId: id, kind: EventKind.EVENT_EXECUTION_START, body: { case: "executionStart", value: { harness: "chat" } } }),
  input: (id: string, text: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_INPUT, body: { case: "message", value: userText(text) } }),
  modelCall: (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_MODEL_CALL, body: { case: "model", value: { model: "m" } } }),
  output: (id: string, m: Message) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: m } }),
  toolCall: (id: string, callId: string, tool: string) =>
    create(EventSchema, {
      executionId: id,
      kind: EventKind.EVENT_TOOL_CALL,
      body: { case: "tool", value: { id: callId, tool, mediation: Mediation.CONTROLLER_MEDIATED, idempotencyKey: `${id}/${callId}` } },
    }),
  toolResult: (id: string, callId: string, text: string) =>
    create(EventSchema, {
      executionId: id,
      kind: EventKind.EVENT_TOOL_RESULT,
      body: { case: "result", value: { id: callId, content: [{ part: { case: "text", value: { text } } }] } },
    }),
  end: (id: string) => create(EventSchema, { executionId: id, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "completed" } } }),
  error: (id: string) =>
    create(EventSchema, { executionId: id, kind: EventKind.EVENT_ERROR, body: { case: "error", value: { code: 13, description: "failed" } } }),
};

async function firstRequest(history: Event[], config: unknown = { tools: [tools.lookup] }): Promise<Message[]> {
  const { sink, models } = scriptedSink([assistantText("ok")]);
  await createChatHarness().run(start(config, history, [userText("now")]), sink);
  return models[0]!.messages;
}

describe("history with tool calls", () => {
  it("run: an earlier OUTPUT's tool calls and their TOOL_RESULT receipts are rebuilt as assistant + tool messages", async () => {
    const calling = callsMessage([{ id: "c1", tool: "lookup", args: { city: "Paris" } }], "let me check");
    const history = [
      ev.start("e1"),
      ev.input("e1", "population of Paris?"),
      ev.modelCall("e1"),
      ev.output("e1", calling),
      ev.toolCall("e1", "c1", "lookup"),
      ev.toolResult("e1", "c1", "2.1M"),
      ev.modelCall("e1"),
      ev.output("e1", assistantText("About 2.1 million.")),
      ev.end("e1"),
    ];
    const messages = await firstRequest(history);
    expect(transcript(messages)).toEqual([
      "user: population of Paris?",
      "assistant: let me check call:c1:lookup",
      "tool: result:c1",
      "assistant: About 2.1 million.",
      "user: now",
    ]);
    expect(messages[1]).toEqual(calling);
    const receipt = history[5]!.body;
    expect(messages[2]!.parts[0]!.part).toEqual({ case: "toolResult", value: receipt.case === "result" ? receipt.value : undefined });
  });

  it("run: a TOOL_RESULT answering no tool call of an earlier OUTPUT is left out, as is a second receipt for the same call", async () => {
    const history = [
      ev.start("e1"),
      ev.input("e1", "q1"),
      // A harness's own host call (no model OUTPUT asked for it), then its receipt.
      ev.toolCall("e1", "h1", "lookup"),
      ev.toolResult("e1", "h1", "not for the model"),
      ev.output("e1", callsMessage([{ id: "c1", tool: "lookup" }])),
      ev.toolResult("e1", "c1", "first"),
      ev.toolResult("e1", "c1", "duplicate"),
      ev.output("e1", assistantText("a1")),
      ev.end("e1"),
    ];
    const messages = await firstRequest(history);
    expect(transcript(messages)).toEqual(["user: q1", "assistant: call:c1:lookup", "tool: result:c1", "assistant: a1", "user: now"]);
    const fed = messages[2]!.parts[0]!.part;
    expect(fed.case === "toolResult" && fed.value.content[0]!.part).toMatchObject({ case: "text", value: { text: "first" } });
  });

  it("run: an earlier tool call with no recorded result gets an error result before the next message", async () => {
    const history = [
      // An unknown tool (answered in its turn, never journaled) next to a known one.
      ev.start("e1"),
      ev.input("e1", "q1"),
      ev.output(
        "e1",
        callsMessage([
          { id: "u1", tool: "rm_rf" },
          { id: "c1", tool: "lookup" },
        ]),
      ),
      ev.toolCall("e1", "c1", "lookup"),
      ev.toolResult("e1", "c1", "r1"),
      ev.output("e1", assistantText("a1")),
      ev.end("e1"),
      // A turn that failed after the model asked for a tool.
      ev.start("e2"),
      ev.input("e2", "q2"),
      ev.output("e2", callsMessage([{ id: "c2", tool: "lookup" }])),
      ev.toolCall("e2", "c2", "lookup"),
      ev.error("e2"),
    ];
    const messages = await firstRequest(history);
    expect(transcript(messages)).toEqual([
      "user: q1",
      "assistant: call:u1:rm_rf call:c1:lookup",
      "tool: result:c1",
      "tool: result:u1:error",
      "assistant: a1",
      "user: q2",
      "assistant: call:c2:lookup",
      "tool: result:c2:error",
      "user: now",
    ]);
    // A receipt after the gap was filled no longer belongs to the conversation.
    const late = await firstRequest([...history, ev.input("e3", "q3"), ev.toolResult("e3", "c2", "late")]);
    expect(transcript(late).slice(-3)).toEqual(["tool: result:c2:error", "user: q3", "user: now"]);
  });
});

describe("parseChatConfig", () => {
  const parse = (v: unknown) => parseChatConfig(new TextEncoder().encode(JSON.stringify(v)));

  it("parseChatConfig: accepts tools with every documented field and a max_steps", () => {
    const config = {
      system_prompt: "p",
      model: "m",
      tools: [tools.lookup, tools.pay, { name: "t", mediation: "CONTROLLER_MEDIATED", approval_timeout_seconds: 0 }],
      max_steps: 2,
    };
    expect(parse(config)).toEqual(config);
  });

  it("parseChatConfig: rejects tools that are not a list, or a tool without a name", () => {
    expect(() => parse({ tools: { name: "lookup" } })).toThrow("chat config tools must be a list");
    for (const t of [{}, { name: "" }, { name: 7 }, null, "lookup"]) {
      expect(() => parse({ tools: [t] }), JSON.stringify(t)).toThrow("every chat tool needs a name");
    }
  });

  it("parseChatConfig: rejects a mediation other than CONTROLLER_MEDIATED or REQUIRES_APPROVAL", () => {
    for (const mediation of ["IN_HARNESS_REPORTED", "UNSPECIFIED", "requires_approval", 2]) {
      expect(() => parse({ tools: [{ name: "x", mediation }] }), String(mediation)).toThrow(
        /chat tool x: mediation must be CONTROLLER_MEDIATED or REQUIRES_APPROVAL/,
      );
    }
  });

  it("parseChatConfig: rejects an input_schema that is not a JSON object", () => {
    for (const input_schema of ["object", [], null, 3]) {
      expect(() => parse({ tools: [{ name: "x", input_schema }] }), JSON.stringify(input_schema)).toThrow("chat tool x: input_schema must be a JSON object");
    }
  });

  it("parseChatConfig: rejects a description that is not a string and an approval timeout that is not a number of seconds", () => {
    expect(() => parse({ tools: [{ name: "x", description: 5 }] })).toThrow("chat tool x: description must be a string");
    for (const approval_timeout_seconds of ["30", -1, null, "abc"]) {
      expect(() => parse({ tools: [{ name: "x", approval_timeout_seconds }] }), JSON.stringify(approval_timeout_seconds)).toThrow(
        "chat tool x: approval_timeout_seconds must be a number of seconds",
      );
    }
  });

  it("parseChatConfig: rejects a max_steps that is not a positive integer", () => {
    for (const max_steps of [0, -1, 1.5, "3", null]) {
      expect(() => parse({ max_steps }), JSON.stringify(max_steps)).toThrow("chat config max_steps must be a positive integer");
    }
  });

  it("run: a bad tool config fails before any model call", async () => {
    const { sink, calls } = scriptedSink([assistantText("never")]);
    await expect(createChatHarness().run(start({ tools: [{ name: "x", mediation: "IN_HARNESS_REPORTED" }] }), sink)).rejects.toThrow(/mediation must be/);
    expect(calls).toEqual([]);
  });
});
