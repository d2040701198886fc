/**
 * The chat harness with MCP tools (runtimes/builtin/chat.ts, `mcp_tools`; docs/tools.md): the tool
 * list is a recorded host-executed `tools/list` call made before the first model call, merged with
 * the config's own tools (which override by name); MCP's `inputSchema` spelling is accepted in the
 * config beside `input_schema`. Run against a recording sink; the end-to-end path against a real
 * MCP server is test/node/integration/mcp-tools.test.ts.
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Mediation, ToolResultSchema, type ToolCall, type ToolResult } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText, userText } from "../../../proto/messages.js";
import { createChatHarness, MCP_TOOLS_LIST_CALL, parseChatConfig } from "../../../runtimes/builtin/chat.js";
import type { EventSink, HarnessStart, ModelRequest } from "../../../runtimes/harness-spi.js";

const LISTED = [
  { name: "lookup", description: "Population of a city", inputSchema: { type: "object", properties: { city: { type: "string" } } } },
  { name: "charge", description: "Charges a card", inputSchema: { type: "object", properties: { cents: { type: "integer" } } } },
];

function sink(listing: (call: ToolCall) => ToolResult) {
  const steps: string[] = [];
  const models: ModelRequest[] = [];
  const toolCalls: ToolCall[] = [];
  const s: EventSink = {
    async model(req) {
      steps.push("model");
      models.push(req);
      return { message: assistantText("done") };
    },
    async output() {},
    async toolCall(call) {
      steps.push(`toolCall:${call.tool}`);
      toolCalls.push(call);
      return listing(call);
    },
    async report() {},
    async usage() {},
  };
  return { sink: s, steps, models, toolCalls };
}

const listed = (call: ToolCall, tools: unknown = LISTED) => create(ToolResultSchema, { id: call.id, output: { tools: tools as JsonObject[] } });

function start(config: unknown): HarnessStart {
  return {
    sessionUid: "sess-000000000000000000000001",
    executionId: "exec-7",
    config: new TextEncoder().encode(JSON.stringify(config)),
    history: [],
    inputs: [userText("go")],
    resumeFromSeq: 0n,
    signal: new AbortController().signal,
  };
}

const offered = (req: ModelRequest) => req.tools?.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));

describe("chat harness: mcp_tools", () => {
  it("run: lists the MCP server's tools through a host-executed tools/list call before the first model call", async () => {
    const { sink: s, steps, models, toolCalls } = sink((c) => listed(c));
    await createChatHarness().run(start({ mcp_tools: true }), s);
    expect(steps).toEqual(["toolCall:tools/list", "model"]);
    expect(toolCalls[0]).toMatchObject({
      id: MCP_TOOLS_LIST_CALL.id,
      tool: "tools/list",
      mediation: Mediation.CONTROLLER_MEDIATED,
      idempotencyKey: "exec-7/tools/list",
    });
    expect(offered(models[0]!)).toEqual(LISTED);
  });

  it("run: a list of names offers only those; the config's own tool of the same name overrides mediation and description", async () => {
    const { sink: s, models } = sink((c) => listed(c));
    const config = {
      mcp_tools: ["charge"],
      tools: [{ name: "charge", description: "Charge (needs approval)", mediation: "REQUIRES_APPROVAL" }, { name: "own" }],
    };
    await createChatHarness().run(start(config), s);
    expect(offered(models[0]!)).toEqual([
      { name: "charge", description: "Charge (needs approval)", inputSchema: LISTED[1]!.inputSchema },
      { name: "own", description: "", inputSchema: { type: "object" } },
    ]);
  });

  it("run: without mcp_tools nothing is listed", async () => {
    const { sink: s, steps } = sink((c) => listed(c));
    await createChatHarness().run(start({ tools: [{ name: "x" }] }), s);
    expect(steps).toEqual(["model"]);
  });

  it("run: a listing that failed or is not a tool list fails the turn before any model call", async () => {
    for (const answer of [
      (c: ToolCall) => create(ToolResultSchema, { id: c.id, isError: true, error: "no" }),
      (c: ToolCall) => create(ToolResultSchema, { id: c.id, output: { other: 1 } }),
    ]) {
      const { sink: s, steps } = sink(answer);
      await expect(createChatHarness().run(start({ mcp_tools: true }), s)).rejects.toThrow(/the MCP server's tool list could not be read/);
      expect(steps).toEqual(["toolCall:tools/list"]);
    }
  });
});

describe("parseChatConfig: MCP spellings", () => {
  const parse = (c: unknown) => parseChatConfig(new TextEncoder().encode(JSON.stringify(c)));

  it("parseChatConfig: accepts inputSchema (MCP's spelling) and offers it to the model like input_schema", async () => {
    const schema = { type: "object", properties: { q: { type: "string" } } };
    expect(parse({ tools: [{ name: "find", inputSchema: schema }] }).tools?.[0]?.inputSchema).toEqual(schema);
    const { sink: s, models } = sink((c) => listed(c));
    await createChatHarness().run(start({ tools: [{ name: "find", inputSchema: schema }] }), s);
    expect(offered(models[0]!)).toEqual([{ name: "find", description: "", inputSchema: schema }]);
  });

  it("parseChatConfig: refuses both spellings at once, a non-object inputSchema, and an mcp_tools that is not true/false/names", () => {
    expect(() => parse({ tools: [{ name: "x", input_schema: {}, inputSchema: {} }] })).toThrow(
      "chat tool x: give input_schema or inputSchema (MCP's spelling), not both",
    );
    expect(() => parse({ tools: [{ name: "x", inputSchema: [] }] })).toThrow("chat tool x: inputSchema must be a JSON object");
    for (const mcp_tools of ["yes", 1, [1]]) {
      expect(() => parse({ mcp_tools }), JSON.stringify(mcp_tools)).toThrow("chat config mcp_tools must be true, false or a list of tool names");
    }
  });
});
