/**
 * Which tool executor a host runs (objects/tools/executor.ts with objects/config.ts): the MCP
 * server when TOOL_MCP_URL is set (over the webhook, if both are), else the webhook, else none;
 * the token and timeout reach the one chosen. Against real stand-ins for both.
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostConfig } from "../../../objects/config.js";
import { createToolExecutor } from "../../../objects/tools/executor.js";
import { Mediation, ToolCallSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";
import { startFakeMcp, type FakeMcp } from "../support/fake-mcp.js";

let webhook: FakeExecutor;
let mcp: FakeMcp;
beforeAll(async () => {
  [webhook, mcp] = await Promise.all([startFakeExecutor(), startFakeMcp()]);
});
afterAll(async () => {
  await webhook?.close();
  await mcp?.close();
});

const call = create(ToolCallSchema, { id: "c1", tool: "lookup", args: { city: "Oslo" }, mediation: Mediation.CONTROLLER_MEDIATED, idempotencyKey: "e/c1" });
const run = (env: Record<string, string>) =>
  createToolExecutor(hostConfig(env))?.execute({ sessionUid: "sess-1", executionId: "e", call }, new AbortController().signal);

describe("createToolExecutor", () => {
  it("createToolExecutor: TOOL_MCP_URL wins over TOOL_EXECUTOR_URL, with its own token", async () => {
    const before = webhook.requests.length;
    await run({ TOOL_MCP_URL: mcp.url, TOOL_MCP_TOKEN: "m-tok", TOOL_EXECUTOR_URL: webhook.url, TOOL_EXECUTOR_TOKEN: "w-tok" });
    expect(mcp.calls.at(-1)).toMatchObject({ tool: "lookup", authorization: "Bearer m-tok", key: "sess-1/e/c1" });
    expect(webhook.requests.length).toBe(before);
  });

  it("createToolExecutor: the webhook alone, with its token; neither set is no executor", async () => {
    const calls = mcp.calls.length;
    await run({ TOOL_EXECUTOR_URL: webhook.url, TOOL_EXECUTOR_TOKEN: "w-tok" });
    expect(webhook.requests.at(-1)).toMatchObject({ key: "sess-1/e/c1", authorization: "Bearer w-tok" });
    expect(mcp.calls.length).toBe(calls);
    expect(createToolExecutor(hostConfig({}))).toBeUndefined();
  });

  it("hostConfig: TOOL_EXECUTOR_TIMEOUT_MS bounds the MCP server too", () => {
    expect(hostConfig({ TOOL_MCP_URL: " http://x/mcp ", TOOL_EXECUTOR_TIMEOUT_MS: "1500" }).mcp).toEqual({
      url: "http://x/mcp",
      token: undefined,
      timeoutMs: 1500,
    });
  });
});
