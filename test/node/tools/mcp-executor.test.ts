/**
 * The MCP tool executor (objects/tools/mcp-executor.ts) over real HTTP against a real MCP server
 * built with the same SDK (test/node/support/fake-mcp.ts): what a tools/call carries (arguments,
 * the idempotency key in `_meta`, the bearer token), how a CallToolResult becomes a receipt,
 * `tools/list` as a recorded call, and the failures that are executor errors (a protocol error,
 * an unreachable server, a timeout) without the token in them.
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { inspect } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ToolExecutionError } from "../../../objects/controller/errors.js";
import { createMcpExecutor, MCP_META } from "../../../objects/tools/mcp-executor.js";
import { Mediation, ToolCallSchema, type ToolCall } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { freePort } from "../../../scripts/dev-server.js";
import { startFakeMcp, type FakeMcp } from "../support/fake-mcp.js";

const TOKEN = "mcp-tok-SECRET-4410";
const SESSION = "sess-0000000000000000000000bb";
const EXECUTION = "exec-9";

function call(o: { id?: string; tool?: string; args?: JsonObject; key?: string } = {}): ToolCall {
  const id = o.id ?? "call-1";
  return create(ToolCallSchema, {
    id,
    tool: o.tool ?? "charge",
    args: o.args ?? { cents: 500 },
    mediation: Mediation.CONTROLLER_MEDIATED,
    idempotencyKey: o.key ?? `${EXECUTION}/${id}`,
  });
}

const live = () => new AbortController().signal;
const request = (c: ToolCall) => ({ sessionUid: SESSION, executionId: EXECUTION, call: c });

function expectToolError(error: unknown, message: RegExp): void {
  expect(error).toBeInstanceOf(ToolExecutionError);
  expect((error as Error).message).toMatch(message);
  expect(inspect(error, { depth: 10 })).not.toContain(TOKEN);
}

let mcp: FakeMcp;
beforeEach(async () => {
  mcp = await startFakeMcp();
});
afterEach(async () => {
  await mcp.close();
});

describe("mcp executor: tools/call", () => {
  it("execute: calls the tool with its arguments, the session-scoped key in _meta and the bearer token", async () => {
    const ex = createMcpExecutor({ url: mcp.url, token: TOKEN });
    const result = await ex.execute(request(call()), live());
    expect(mcp.calls).toHaveLength(1);
    const seen = mcp.calls[0]!;
    expect(seen).toMatchObject({ tool: "charge", args: { cents: 500 }, key: `${SESSION}/${EXECUTION}/call-1`, authorization: `Bearer ${TOKEN}` });
    expect(seen.meta).toMatchObject({ [MCP_META.session]: SESSION, [MCP_META.executionId]: EXECUTION, [MCP_META.callId]: "call-1" });
    expect(result.id).toBe("call-1");
    expect(result.isError).toBe(false);
    expect(result.output).toEqual({ done: "charge", args: { cents: 500 } });
    expect(result.content.map((p) => p.part.case === "text" && p.part.value.text)).toEqual(["charge done"]);
  });

  it("execute: the same key asked twice is one effect with the same receipt (the server deduplicates)", async () => {
    const ex = createMcpExecutor({ url: mcp.url });
    const first = await ex.execute(request(call()), live());
    const again = await ex.execute(request(call()), live());
    expect(again).toEqual(first);
    expect(mcp.effects.get(`${SESSION}/${EXECUTION}/call-1`)).toBe(1);
    expect(mcp.calls).toHaveLength(2);
  });

  it("execute: a tool-level error is a receipt with is_error and the tool's text, not an executor failure", async () => {
    mcp.next = () => ({ kind: "tool-error", text: "card declined" });
    const result = await createMcpExecutor({ url: mcp.url }).execute(request(call()), live());
    expect(result).toMatchObject({ isError: true, error: "card declined" });
  });

  it("execute: an unknown tool or arguments the tool's schema refuses are answered by the server as tool errors", async () => {
    const ex = createMcpExecutor({ url: mcp.url });
    const unknown = await ex.execute(request(call({ tool: "nope" })), live());
    expect(unknown.isError).toBe(true);
    expect(unknown.error).toMatch(/nope/);
    const bad = await ex.execute(request(call({ id: "call-2", args: { cents: "five" } })), live());
    expect(bad.isError).toBe(true);
    expect(mcp.effects.size).toBe(0);
  });
});

describe("mcp executor: tools/list", () => {
  it("execute(tools/list): the server's tools with their input schemas, as the receipt's output", async () => {
    const result = await createMcpExecutor({ url: mcp.url }).execute(request(call({ tool: "tools/list", args: {} })), live());
    expect(mcp.listCalls).toBe(1);
    expect(mcp.calls).toHaveLength(0);
    const tools = (result.output as { tools: { name: string; description: string; inputSchema: JsonObject }[] }).tools;
    expect(tools.map((t) => t.name)).toEqual(["charge", "lookup"]);
    expect(tools[1]).toMatchObject({ description: "Population of a city", inputSchema: { type: "object", properties: { city: { type: "string" } } } });
  });
});

describe("mcp executor: failures", () => {
  it("execute: an unreachable server is an executor failure naming the host, without the token", async () => {
    const url = `http://127.0.0.1:${await freePort()}/mcp`;
    const error = await createMcpExecutor({ url, token: TOKEN })
      .execute(request(call()), live())
      .catch((e: unknown) => e);
    expectToolError(error, /^MCP server at 127\.0\.0\.1:\d+ is unreachable or broke off its answer to charge$/);
  });

  it("execute: a server that holds its answer past the timeout is an executor failure", async () => {
    mcp.next = () => ({ kind: "effect-then-hold" });
    const error = await createMcpExecutor({ url: mcp.url, token: TOKEN, timeoutMs: 500 })
      .execute(request(call()), live())
      .catch((e: unknown) => e);
    expectToolError(error, /did not answer charge within 500 ms$/);
    expect(mcp.effects.get(`${SESSION}/${EXECUTION}/call-1`)).toBe(1);
  });

  it("execute: an endpoint that is not an MCP server is an executor failure", async () => {
    const error = await createMcpExecutor({ url: mcp.url.replace(/\/mcp$/, "/other"), token: TOKEN })
      .execute(request(call()), live())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolExecutionError);
    expect(inspect(error, { depth: 10 })).not.toContain(TOKEN);
  });

  it("execute: the turn's own abort wins over the executor's failure", async () => {
    mcp.next = () => ({ kind: "effect-then-hold" });
    const ac = new AbortController();
    const pending = createMcpExecutor({ url: mcp.url })
      .execute(request(call()), ac.signal)
      .catch((e: unknown) => e);
    await mcp.waitForCalls(1);
    ac.abort(new Error("turn canceled"));
    expect(((await pending) as Error).message).toBe("turn canceled");
  });
});
