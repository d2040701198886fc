/**
 * MCP tools end to end (docs/tools.md "MCP servers") against a real `wrangler dev` whose
 * TOOL_MCP_URL points at a real MCP server built with the official SDK
 * (test/node/support/fake-mcp.ts, which deduplicates by the key in `_meta` and counts effects):
 * the executor contract holds as with the webhook. The intent is journaled before the call, the
 * key is sent and re-sent unchanged on a re-drive after the host is killed mid-call (one effect),
 * an approval gate runs nothing before the decision, replay asks the server nothing, and the chat
 * harness can take its tools from the server's `tools/list`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { startFakeMcp, type FakeMcp } from "../support/fake-mcp.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeRequest, type Reply } from "../support/fake-openai.js";
import { kindsOf, startHost, type Host } from "../support/host.js";

const TOKEN = "mcp-SECRET-5521";
let mcp: FakeMcp;
let model: FakeOpenAi;
let host: Host;

beforeAll(async () => {
  mcp = await startFakeMcp();
  model = await startFakeOpenAi();
  host = await startHost({ vars: { TEST_HARNESSES: "1", TOOL_MCP_URL: mcp.url, TOOL_MCP_TOKEN: TOKEN, MODEL_BASE_URL: model.url, MODEL_DEFAULT: "m" } });
});

afterAll(async () => {
  await host?.stop();
  await mcp?.close();
  await model?.close();
});

const config = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const receipts = (rs: LogRecord[]) => rs.flatMap((r) => (r.event?.body.case === "result" ? [r.event.body.value] : []));

describe("MCP server as the tool executor", () => {
  it("tool: the effect runs once on the MCP server when the host is killed mid-call, and Resume re-sends the same key", async () => {
    const s = await host.client.create({ harness: "tools" });
    const uid = s.metadata!.uid;
    const before = mcp.calls.length;
    let first = true;
    mcp.next = () => (first ? ((first = false), { kind: "effect-then-hold" }) : { kind: "ok" });
    const turn = host.client
      .exec({ session: uid, inputs: ["charge"], config: config({ calls: [{ id: "c1", tool: "charge", args: { cents: 500 } }] }) })
      .catch((e) => e);
    await mcp.waitForCalls(before + 1);
    // The intent was journaled before the call reached the server.
    await host.kill();
    mcp.releaseHeld();
    await host.restart();
    await turn;
    expect(await host.kinds(uid)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL"]);

    await host.client.resume(uid);
    const sent = mcp.calls.slice(before);
    expect(sent.map((c) => c.key)).toEqual([sent[0]!.key, sent[0]!.key]);
    expect(sent[0]!.key).toMatch(new RegExp(`^${uid}/.+/c1$`));
    expect(sent[0]!.authorization).toBe(`Bearer ${TOKEN}`);
    expect(mcp.effects.get(sent[0]!.key)).toBe(1);
    const rs = await host.records(uid);
    expect(kindsOf(rs)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "TOOL_RESULT", "OUTPUT", "END", "LIFECYCLE"]);
    expect(receipts(rs)).toMatchObject([{ id: "c1", isError: false, output: { done: "charge", args: { cents: 500 } } }]);

    const calls = mcp.calls.length;
    const v = await host.client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, outputs: ["charge: ok CODE_UNSPECIFIED charge done"] });
    expect(mcp.calls.length).toBe(calls);
    expect(JSON.stringify(rs.map((r) => r.toString()))).not.toContain("SECRET");
  });

  it("approve: a REQUIRES_APPROVAL call reaches the MCP server only after the decision, once", async () => {
    const s = await host.client.create({ harness: "tools" });
    const uid = s.metadata!.uid;
    const before = mcp.calls.length;
    const turn = await host.client.exec({
      session: uid,
      inputs: ["pay"],
      config: config({ calls: [{ id: "g1", tool: "charge", args: { cents: 9 }, mediation: "REQUIRES_APPROVAL" }] }),
    });
    expect(turn.finalSession?.execState).toBe(ExecState.EXEC_AWAITING);
    expect(mcp.calls.length).toBe(before);
    const p = (await host.client.get(uid)).pendingApproval!;
    await host.client.raw.approve({ session: uid, executionId: p.executionId, toolCallId: p.toolCallId, requestSeq: p.requestSeq, approved: true });
    await host.client.resume(uid);
    expect(mcp.calls.length - before).toBe(1);
    expect(receipts(await host.records(uid))).toMatchObject([{ id: "g1", isError: false, approvalRequestSeq: p.requestSeq }]);
  });

  it("chat with mcp_tools: the tools come from the server's tools/list, recorded; replay asks neither server nor model", async () => {
    model.next = (req: FakeRequest): Reply => {
      const result = req.body.messages?.find((m) => m.role === "tool");
      if (!result) return { kind: "answer", text: "", toolCalls: [{ id: "call_1", name: "lookup", arguments: JSON.stringify({ city: "Paris" }) }] };
      return { kind: "answer", text: `final: ${result.content}` };
    };
    const models0 = model.requests.length;
    const lists0 = mcp.listCalls;
    const turn = await host.client.exec({ harness: "chat", inputs: ["population of Paris?"], config: config({ mcp_tools: true }) });
    const uid = turn.session.metadata!.uid;
    const rs = await host.records(uid);
    expect(kindsOf(rs)).toEqual([
      "EXECUTION_START",
      "INPUT",
      "TOOL_CALL",
      "TOOL_RESULT",
      "MODEL_CALL",
      "OUTPUT",
      "TOOL_CALL",
      "TOOL_RESULT",
      "MODEL_CALL",
      "OUTPUT",
      "END",
    ]);
    expect(mcp.listCalls - lists0).toBe(1);
    const intent = rs[2]!.event!.body;
    expect(intent.case === "tool" && intent.value.tool).toBe("tools/list");
    // The model was offered the server's tools with their input schemas.
    const offered = model.requests[models0]!.body.tools as { function: { name: string; parameters: { properties: Record<string, unknown> } } }[];
    expect(offered.map((t) => t.function.name)).toEqual(["charge", "lookup"]);
    expect(Object.keys(offered[1]!.function.parameters.properties)).toEqual(["city"]);
    expect(turn.outputs.at(-1)).toBe("final: lookup done");

    const calls = mcp.calls.length;
    const models = model.requests.length;
    const v = await host.client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n, divergence: "" });
    expect(mcp.calls.length).toBe(calls);
    expect(mcp.listCalls - lists0).toBe(1);
    expect(model.requests.length).toBe(models);
  });
});
