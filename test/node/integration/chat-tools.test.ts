/**
 * The chat harness's tool loop end to end (docs/behaviour.md §1.5, §2.1 I1/I3, §7.3) against a real
 * `wrangler dev`, a stand-in OpenAI-compatible provider and a stand-in tool executor webhook, both
 * over real HTTP: a host-executed call, and an approval-gated call approved and denied.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventKind, Lifecycle_Kind, Mediation, ToolResult_Code, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeRequest, type Reply } from "../support/fake-openai.js";

let model: FakeOpenAi;
let executor: FakeExecutor;
let server: DevServer;
let client: SessionsClient;

beforeAll(async () => {
  model = await startFakeOpenAi();
  executor = await startFakeExecutor();
  server = await startDevServer({ vars: { MODEL_BASE_URL: model.url, MODEL_DEFAULT: "m", TOOL_EXECUTOR_URL: executor.url } });
  client = new SessionsClient({ server: server.url });
});

afterAll(async () => {
  await server?.dispose();
  await executor?.close();
  await model?.close();
});

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}

const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));
const config = (tools: unknown[]) => new TextEncoder().encode(JSON.stringify({ tools }));

/**
 * The stand-in model: a request that carries no tool message yet is answered with one call of
 * `tool`; once a tool result is in the conversation it answers text quoting that result.
 */
function callThenAnswer(callId: string, tool: string, args: unknown): (req: FakeRequest) => Reply {
  return (req) => {
    const result = req.body.messages?.find((m) => m.role === "tool");
    if (!result) return { kind: "answer", text: "", toolCalls: [{ id: callId, name: tool, arguments: JSON.stringify(args) }] };
    return { kind: "answer", text: `final: ${result.content}` };
  };
}

describe("chat with a host-executed tool", () => {
  it("exec: a CONTROLLER_MEDIATED call runs once at the executor and its result reaches the model; replay asks neither again", async () => {
    model.next = callThenAnswer("call_1", "lookup", { city: "Paris" });
    executor.next = (r) => ({ kind: "ok", output: { population: 2_100_000 }, content: `${(r.body.args as { city: string }).city}: 2.1M` });
    const models0 = model.requests.length;
    const execs0 = executor.requests.length;

    const tools = [{ name: "lookup", description: "Population of a city", input_schema: { type: "object", properties: { city: { type: "string" } } } }];
    const turn = await client.exec({ harness: "chat", inputs: ["population of Paris?"], config: config(tools) });
    const uid = turn.session.metadata!.uid;
    const execId = turn.records[0]!.event!.executionId;

    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT", "MODEL_CALL", "OUTPUT", "END"]);
    const out1 = rs[3]!.event!.body;
    expect(out1.case === "message" && out1.value.parts.map((p) => p.part.case === "toolCall" && p.part.value)).toMatchObject([
      { id: "call_1", tool: "lookup", args: { city: "Paris" } },
    ]);
    const intent = rs[4]!.event!.body;
    expect(intent.case === "tool" && intent.value).toMatchObject({
      id: "call_1",
      tool: "lookup",
      mediation: Mediation.CONTROLLER_MEDIATED,
      idempotencyKey: `${execId}/call_1`,
    });
    const receipt = rs[5]!.event!.body;
    expect(receipt.case === "result" && receipt.value).toMatchObject({ id: "call_1", isError: false, output: { population: 2_100_000 } });
    expect(turn.outputs).toEqual(["", "final: Paris: 2.1M"]);

    // The executor: exactly one request, keyed by session and the harness's <execution>/<call id>.
    expect(executor.requests.slice(execs0)).toMatchObject([
      {
        key: `${uid}/${execId}/call_1`,
        body: { session: uid, execution_id: execId, call_id: "call_1", tool: "lookup", args: { city: "Paris" }, idempotency_key: `${execId}/call_1` },
      },
    ]);
    expect(executor.effects.get(`${uid}/${execId}/call_1`)).toBe(1);

    // The model: offered the tool, then shown its call and the result.
    const [first, second] = model.requests.slice(models0);
    expect(model.requests.length - models0).toBe(2);
    expect(first!.body.tools).toEqual([
      { type: "function", function: { name: "lookup", description: "Population of a city", parameters: tools[0]!.input_schema } },
    ]);
    expect(second!.body.messages?.slice(-2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: "call_1", content: "Paris: 2.1M" },
    ]);

    const v = await client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, outputs: ["", "final: Paris: 2.1M"], modelCalls: 0n, divergence: "" });
    expect(model.requests.length - models0).toBe(2);
    expect(executor.requests.length - execs0).toBe(1);
    expect(await records(uid)).toEqual(rs);
  });

  it("exec: a lone surrogate in the model's answer and in the tool's result is journaled as U+FFFD, the turn completes and replays", async () => {
    // Half of a UTF-16 pair (an emoji cut in two), sent as JSON escapes: UTF-8, and so protobuf, cannot hold it.
    const cut = "\ud83d";
    model.next = (req) => {
      const result = req.body.messages?.find((m) => m.role === "tool");
      if (!result)
        return { kind: "answer", text: `looking ${cut}`, toolCalls: [{ id: "call_cut", name: "lookup", arguments: JSON.stringify({ city: `Nice ${cut}` }) }] };
      return { kind: "answer", text: `final: ${result.content} ${cut}` };
    };
    executor.next = () => ({ kind: "ok", output: { [`k${cut}`]: `v${cut}` }, content: `Nice: 0.3M ${cut}` });
    const tools = [{ name: "lookup", input_schema: { type: "object", properties: { city: { type: "string" } } } }];
    const turn = await client.exec({ harness: "chat", inputs: ["population of Nice?"], config: config(tools) });
    const uid = turn.session.metadata!.uid;
    expect((await client.get(uid)).execState).toBe(ExecState.EXEC_COMPLETED);
    const rs = await records(uid);
    expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "TOOL_RESULT", "MODEL_CALL", "OUTPUT", "END"]);
    const first = rs[3]!.event!.body;
    expect(first.case === "message" && first.value.parts.map((p) => p.part.value)).toMatchObject([
      { text: "looking \ufffd" },
      { id: "call_cut", args: { city: "Nice \ufffd" } },
    ]);
    const receipt = rs[5]!.event!.body;
    expect(receipt.case === "result" && receipt.value).toMatchObject({ id: "call_cut", output: { "k\ufffd": "v\ufffd" } });
    // The model was shown the result as journaled, so its second call's input hash is the one a replay computes.
    expect(turn.outputs.at(-1)).toBe("final: Nice: 0.3M \ufffd \ufffd");
    const v = await client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n, divergence: "" });
  });
});

describe("chat with an approval-gated tool", () => {
  const payTools = [{ name: "pay", mediation: "REQUIRES_APPROVAL" }];

  /** Runs a turn whose model asks to pay; it parks. Returns the session, the parked frame and the gate. */
  async function parkedTurn() {
    model.next = callThenAnswer("call_pay", "pay", { amount: 10 });
    executor.next = () => ({ kind: "ok" }); // answers content "pay done"
    const models0 = model.requests.length;
    const turn = await client.exec({ harness: "chat", inputs: ["pay the invoice"], config: config(payTools) });
    const uid = turn.session.metadata!.uid;
    const execId = turn.records[0]!.event!.executionId;
    return { uid, execId, turn, models0 };
  }

  it("exec: the turn parks AWAITING with the pending approval, the executor untouched; Approve then Resume runs it once and the model answers", async () => {
    const execs0 = executor.requests.length;
    const { uid, execId, turn, models0 } = await parkedTurn();
    const final = turn.finalSession;
    expect(final?.execState).toBe(ExecState.EXEC_AWAITING);
    expect(final?.pendingApproval).toMatchObject({ executionId: execId, toolCallId: "call_pay" });
    const requestSeq = final!.pendingApproval!.requestSeq;
    const parked = await records(uid);
    // Nothing terminal after the gate; this host then suspends the parked session (LIFECYCLE(SUSPEND), COLD).
    expect(kinds(parked)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE"]);
    const marker = parked[6]!.event!.body;
    expect(marker.case === "lifecycle" && marker.value.kind).toBe(Lifecycle_Kind.LIFECYCLE_SUSPEND);
    expect(final!.lastSeq).toBe(parked.at(-1)!.seq);
    expect(parked[5]!.seq).toBe(requestSeq);
    const intent = parked[4]!.event!.body;
    expect(intent.case === "tool" && intent.value).toMatchObject({
      id: "call_pay",
      mediation: Mediation.REQUIRES_APPROVAL,
      idempotencyKey: `${execId}/call_pay`,
    });
    expect(executor.requests.length - execs0).toBe(0);
    expect(model.requests.length - models0).toBe(1);

    const approved = await client.raw.approve({ session: uid, executionId: execId, toolCallId: "call_pay", requestSeq, approved: true, reason: "ok" });
    expect(approved.decision?.event?.kind).toBe(EventKind.EVENT_APPROVAL_RESULT);
    expect(executor.requests.length - execs0).toBe(0);

    const resumed = await client.resume(uid);
    expect(resumed.execState).toBe(ExecState.EXEC_COMPLETED);
    expect(resumed.pendingApproval).toBeUndefined();
    expect(executor.requests.slice(execs0).map((r) => r.key)).toEqual([`${uid}/${execId}/call_pay`]);
    expect(executor.effects.get(`${uid}/${execId}/call_pay`)).toBe(1);
    expect(model.requests.length - models0).toBe(2);
    expect(model.requests[models0 + 1]!.body.messages?.at(-1)).toEqual({ role: "tool", tool_call_id: "call_pay", content: "pay done" });

    const rs = await records(uid);
    expect(kinds(rs.slice(parked.length))).toEqual(["APPROVAL_RESULT", "TOOL_RESULT", "MODEL_CALL", "OUTPUT", "END", "LIFECYCLE"]);
    const receipt = rs[parked.length + 1]!.event!.body;
    expect(receipt.case === "result" && receipt.value).toMatchObject({
      id: "call_pay",
      isError: false,
      code: ToolResult_Code.CODE_UNSPECIFIED,
      approvalRequestSeq: requestSeq,
    });
    const answer = rs[parked.length + 3]!.event!.body;
    expect(answer.case === "message" && answer.value.parts[0]?.part).toMatchObject({ case: "text", value: { text: "final: pay done" } });

    const v = await client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n });
    expect(v.outputs.at(-1)).toBe("final: pay done");
    expect(model.requests.length - models0).toBe(2);
    expect(executor.requests.length - execs0).toBe(1);
  });

  it("exec: a denied gate is fed to the model as an APPROVAL_DENIED receipt and the executor never runs", async () => {
    const execs0 = executor.requests.length;
    const { uid, execId, turn, models0 } = await parkedTurn();
    const requestSeq = turn.finalSession!.pendingApproval!.requestSeq;
    await client.raw.approve({ session: uid, executionId: execId, toolCallId: "call_pay", requestSeq, approved: false, reason: "too expensive" });
    const resumed = await client.resume(uid);
    expect(resumed.execState).toBe(ExecState.EXEC_COMPLETED);

    const rs = await records(uid);
    const receipt = rs.find((r) => r.event?.kind === EventKind.EVENT_TOOL_RESULT)!.event!.body;
    expect(receipt.case === "result" && receipt.value).toMatchObject({
      id: "call_pay",
      isError: true,
      code: ToolResult_Code.APPROVAL_DENIED,
      approvalRequestSeq: requestSeq,
    });
    const denial = "Execution of pay was denied: too expensive. The tool did not run.";
    expect(model.requests.length - models0).toBe(2);
    expect(model.requests[models0 + 1]!.body.messages?.at(-1)).toEqual({ role: "tool", tool_call_id: "call_pay", content: denial });
    expect(kinds(rs).slice(-5)).toEqual(["TOOL_RESULT", "MODEL_CALL", "OUTPUT", "END", "LIFECYCLE"]);
    const answer = rs.at(-3)!.event!.body;
    expect(answer.case === "message" && answer.value.parts[0]?.part).toMatchObject({ case: "text", value: { text: `final: ${denial}` } });

    expect(executor.requests.length - execs0).toBe(0);
    expect(executor.effects.has(`${uid}/${execId}/call_pay`)).toBe(false);
    expect((await client.verify(uid, { replay: true })).modelCalls).toBe(0n);
  });
});
