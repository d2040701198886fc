/**
 * Approval gates over the wire, host side (docs/behaviour.md §4.11 "Over the wire"; docs/tunnel.md;
 * checklist §8.5 #25, #26, #27), against a real `wrangler dev` with a stand-in tool executor that counts
 * requests. The harness is a bare WebSocket peer (the `ws` package and the generated messages, no
 * SDK), so every frame the host sends is seen as sent: after Approve, the recovery stream carries
 * the decision frame, then the receipt frame, whose seqs are the journal's; replay re-sends the
 * same pair and writes nothing.
 */
import { create, equals, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ApprovalResultSchema,
  EventKind,
  type EventSchema,
  Lifecycle_Kind,
  LogRecordSchema,
  Mediation,
  ToolResult_Code,
  ToolResultSchema,
  type LogRecord,
} from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { Resumability, type ControllerFrame } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { HarnessMessageSchema, HostMessageSchema } from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { sleep, startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";

const NAME = "wire-gate";

let server: DevServer;
let client: SessionsClient;
let executor: FakeExecutor;
let peer: GatePeer;
/** What the executor does, per session uid. */
const replies = new Map<string, "ok" | "fail">();

beforeAll(async () => {
  executor = await startFakeExecutor();
  executor.next = (r) => (replies.get(r.body.session) === "fail" ? { kind: "fail", status: 500 } : { kind: "ok" });
  server = await startDevServer({ vars: { TOOL_EXECUTOR_URL: executor.url } });
  client = new SessionsClient({ server: server.url });
  peer = new GatePeer();
  await peer.welcomed;
});

afterAll(async () => {
  peer?.ws.terminate();
  await server?.dispose();
  await executor?.close();
});

interface Stream {
  id: string;
  session: string;
  frames: ControllerFrame[];
}

/**
 * A harness written against the wire: on Start it makes one approval-gated call; on a park it
 * acknowledges with PARKED (and stops); on a receipt it outputs "continued" and ends.
 */
class GatePeer {
  readonly ws: WebSocket;
  readonly streams: Stream[] = [];
  readonly welcomed: Promise<void>;

  constructor() {
    this.ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/harness/v1/connect?name=${NAME}`, "agentsessions.harness.v1");
    let welcome!: () => void;
    let refuse!: (e: Error) => void;
    this.welcomed = new Promise((ok, fail) => ((welcome = ok), (refuse = fail)));
    this.welcomed.catch(() => undefined);
    // A socket error (the host reset the connection) ends the peer; without a listener, ws would
    // throw it as an uncaught exception and fail the whole run rather than this test.
    this.ws.on("error", (e) => refuse(e));
    const descriptor = { id: NAME, version: "1", capabilities: { resumability: Resumability.STATELESS_REPLAY } };
    this.ws.on("open", () => this.send({ message: { case: "hello", value: { name: NAME, descriptor, agent: "gate-peer" } } }));
    this.ws.on("message", (data: Buffer) => {
      const m = fromBinary(HostMessageSchema, new Uint8Array(data));
      if (m.message.case === "welcome") welcome();
      if (m.message.case === "describe") this.send({ message: { case: "described", value: { id: m.message.value.id, descriptor } } });
      if (m.message.case === "frame" && m.message.value.frame) this.onFrame(m.message.value.stream, m.message.value.frame);
    });
  }

  private onFrame(id: string, f: ControllerFrame): void {
    let s = this.streams.find((x) => x.id === id);
    if (!s) this.streams.push((s = { id, session: f.session, frames: [] }));
    s.frames.push(f);
    const executionId = s.frames[0]!.executionId;
    const event = (e: Pick<MessageInitShape<typeof EventSchema>, "kind" | "body">) =>
      this.send({ message: { case: "event", value: { stream: id, event: { executionId, ...e } } } });
    switch (f.frame.case) {
      case "start":
        event({
          kind: EventKind.EVENT_TOOL_CALL,
          body: {
            case: "tool",
            value: { id: "c1", tool: "refund", args: { amount: 5 }, mediation: Mediation.REQUIRES_APPROVAL, idempotencyKey: `${executionId}/c1` },
          },
        });
        break;
      case "park":
        event({ kind: EventKind.EVENT_PARKED, body: { case: "parked", value: f.frame.value } });
        break;
      case "tool":
        event({
          kind: EventKind.EVENT_OUTPUT,
          body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text: "continued" } } }] } },
        });
        event({ kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } });
        break;
    }
  }

  send(m: MessageInitShape<typeof HarnessMessageSchema>): void {
    this.ws.send(toBinary(HarnessMessageSchema, create(HarnessMessageSchema, m)));
  }

  /** The session's streams, in the order the host opened them. */
  of(uid: string): Stream[] {
    return this.streams.filter((s) => s.session === uid);
  }

  async streamsOf(uid: string, n: number): Promise<Stream[]> {
    for (let i = 0; i < 800 && this.of(uid).length < n; i++) await sleep(25);
    expect(this.of(uid)).toHaveLength(n);
    return this.of(uid);
  }
}

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}

const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));
const executorCalls = (uid: string) => executor.requests.filter((r) => r.body.session === uid).length;
const frameCases = (s: Stream) => s.frames.map((f) => f.frame.case);

describe("approval gates over the wire", () => {
  const variants = [
    { name: "approved", approved: true, executor: "ok", code: ToolResult_Code.CODE_UNSPECIFIED, isError: false, runs: 1 },
    { name: "denied", approved: false, executor: "ok", code: ToolResult_Code.APPROVAL_DENIED, isError: true, runs: 0 },
    { name: "approved, executor failing", approved: true, executor: "fail", code: ToolResult_Code.EXECUTOR_ERROR, isError: true, runs: 1 },
  ] as const;

  for (const v of variants) {
    it(`${v.name}: the park frame is the journaled request and nothing terminal is written; Resume sends the decision frame then the receipt (the journal's seqs, code ${ToolResult_Code[v.code]}); replay re-sends the same pair and writes nothing (checklist §8.5 #25 #26 #27)`, async () => {
      const uid = (await client.create({ harness: NAME })).metadata!.uid;
      replies.set(uid, v.executor);

      // The live turn parks on the gate; the park frame names the journaled request.
      const turn = await client.exec({ session: uid, inputs: ["go"] });
      const pending = turn.finalSession!.pendingApproval!;
      const live = (await records(uid)).find((r) => r.event!.kind === EventKind.EVENT_APPROVAL_REQUEST)!;
      expect(pending).toMatchObject({ toolCallId: "c1", requestSeq: live.seq, executionId: live.event!.executionId });
      const [first] = await peer.streamsOf(uid, 1);
      expect(frameCases(first!)).toEqual(["start", "park"]);
      expect(first!.frames[1]!.frame.value).toMatchObject({ executionId: pending.executionId, toolCallId: "c1", requestSeq: pending.requestSeq });
      // #25: the park frame's tuple is the journaled request's own (its execution id, call id and
      // seq); the turn did not complete (no output, awaiting the decision), nothing terminal and no
      // PARKED is journaled, and the executor was not called.
      const park = first!.frames[1]!.frame;
      expect(park.case === "park" && park.value).toMatchObject({ executionId: live.event!.executionId, toolCallId: "c1", requestSeq: live.seq });
      expect(live.event!.body.case === "approval" && live.event!.body.value.toolCallId).toBe("c1");
      expect(turn.outputs).toEqual([]);
      expect(turn.finalSession!.execState).toBe(ExecState.EXEC_AWAITING);
      const parked = await records(uid);
      expect(kinds(parked)).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "APPROVAL_REQUEST", "LIFECYCLE"]);
      expect(parked[4]!.event!.body.case === "lifecycle" && parked[4]!.event!.body.value.kind).toBe(Lifecycle_Kind.LIFECYCLE_SUSPEND);
      expect(executorCalls(uid)).toBe(0);

      const decided = await client.approve(uid, {
        executionId: pending.executionId,
        toolCallId: "c1",
        requestSeq: pending.requestSeq,
        approved: v.approved,
        reason: v.approved ? "fine" : "too much",
      });
      const decisionSeq = decided.decision!.seq;
      expect(executorCalls(uid)).toBe(0);

      // #26: the recovery stream is Start, the decision, then the receipt.
      await client.resume(uid);
      const [, recovery] = await peer.streamsOf(uid, 2);
      expect(frameCases(recovery!)).toEqual(["start", "approval", "tool"]);
      const decision = recovery!.frames[1]!.frame;
      const receipt = recovery!.frames[2]!.frame;
      expect(decision.case === "approval" && decision.value).toMatchObject({
        toolCallId: "c1",
        approved: v.approved,
        reason: v.approved ? "fine" : "too much",
        requestSeq: pending.requestSeq,
      });
      expect(receipt.case === "tool" && receipt.value).toMatchObject({
        id: "c1",
        code: v.code,
        isError: v.isError,
        approvalRequestSeq: pending.requestSeq,
        approvalDecisionSeq: decisionSeq,
      });
      expect(executorCalls(uid)).toBe(v.runs);

      const journal = await records(uid);
      expect(kinds(journal)).toEqual([
        "EXECUTION_START",
        "INPUT",
        "TOOL_CALL",
        "APPROVAL_REQUEST",
        "LIFECYCLE",
        "APPROVAL_RESULT",
        "TOOL_RESULT",
        "OUTPUT",
        "END",
        "LIFECYCLE",
      ]);
      expect(journal[5]!.seq).toBe(decisionSeq);
      const journaled = journal[6]!.event!.body;
      expect(journaled.case === "result" && receipt.case === "tool" && equals(ToolResultSchema, journaled.value, receipt.value)).toBe(true);

      // #27: replay of the completed gated turn re-sends the same decision and receipt.
      const bytes = journal.map((r) => toBinary(LogRecordSchema, r));
      const audit = await client.verify(uid, { replay: true });
      expect(audit).toMatchObject({ chainOk: true, replayOk: true, outputs: ["continued"], modelCalls: 0n, divergence: "" });
      const [, , replayed] = await peer.streamsOf(uid, 3);
      expect(frameCases(replayed!)).toEqual(["start", "approval", "tool"]);
      const [d2, r2] = [replayed!.frames[1]!.frame, replayed!.frames[2]!.frame];
      expect(d2.case === "approval" && decision.case === "approval" && equals(ApprovalResultSchema, d2.value, decision.value)).toBe(true);
      expect(r2.case === "tool" && receipt.case === "tool" && equals(ToolResultSchema, r2.value, receipt.value)).toBe(true);
      expect(executorCalls(uid)).toBe(v.runs);
      expect((await records(uid)).map((r) => toBinary(LogRecordSchema, r))).toEqual(bytes);
    });
  }
});
