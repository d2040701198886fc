/**
 * The host side of Harness.Connect over the tunnel (docs/tunnel.md; docs/contract.md §5.3; checklist
 * checklist §8.2, checklist §8.5): a scripted remote harness behind an in-process channel drives the controller's own
 * sinks, live and on replay, exactly as an in-process harness does.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventKind, EventSchema, Mediation, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessDescriptorSchema, Resumability, type ControllerFrame } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { textOf, userText } from "../../../proto/messages.js";
import { StreamInbox } from "../../../runtimes/tunnel/inbox.js";
import { createTunnelHarness, type TunnelChannel } from "../../../runtimes/tunnel/tunnel-harness.js";
import { ApprovalParkedError } from "../../../objects/controller/errors.js";
import { replayJournal } from "../../../objects/controller/replay.js";
import { decisionOf } from "../../../objects/controller/tool-steps.js";
import { counterScript, echoScript, fakeExecutor, liveTurn, newLog, scriptedModels, toolDeps } from "../support/controller-fixture.js";

type Peer = (frame: ControllerFrame, emit: (e: Partial<Event> & { kind: EventKind }) => void, end: (why?: string) => void) => void;

/** A remote harness in process: it sees every frame the host sends and answers with events. */
function remote(peer: Peer, descriptorVersion = "1") {
  const inbox = new StreamInbox();
  const sent: ControllerFrame[] = [];
  const closed: string[] = [];
  const channel: TunnelChannel = {
    describe: async () =>
      create(HarnessDescriptorSchema, { id: "remote", version: descriptorVersion, capabilities: { resumability: Resumability.STATELESS_REPLAY } }),
    open: async () => ({ ok: true }),
    async send(stream, frame) {
      sent.push(frame);
      queueMicrotask(() =>
        peer(
          frame,
          (e) => inbox.deliver(stream, { event: create(EventSchema, { executionId: frame.executionId, ...e } as never) }),
          (why) => inbox.deliver(stream, { closed: why ?? "disconnected mid-turn" }),
        ),
      );
      return true;
    },
    close: async (_stream, reason) => void closed.push(reason),
  };
  const harness = createTunnelHarness({
    name: "remote",
    channel,
    inbox,
    decisionOf,
    isPark: (e): e is ApprovalParkedError => e instanceof ApprovalParkedError,
  });
  return { harness, sent, closed };
}

/** The echo harness, written against the wire. */
const echoPeer: Peer = (f, emit) => {
  if (f.frame.case === "start") {
    emit({
      kind: EventKind.EVENT_MODEL_CALL,
      body: { case: "model", value: { model: "m", id: "corr-1", messages: [userText(textOf(f.frame.value.inputs.at(-1)))] } } as never,
    });
  } else if (f.frame.case === "model") {
    expect(f.frame.value.modelCallId).toBe("corr-1");
    emit({ kind: EventKind.EVENT_USAGE, body: { case: "usage", value: { model: "m", inputTokens: 1n } } as never });
    emit({ kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } as never });
  }
};

describe("tunnel harness", () => {
  it("tunnel: a remote harness's model call is recorded and answered; replay needs no model call", async () => {
    const fx = newLog();
    const r = remote(echoPeer);
    const out = await liveTurn(fx, r.harness, scriptedModels(counterScript), ["hi"], { name: "remote" });
    expect(out).toEqual({ kind: "completed" });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "USAGE", "END"]);
    expect(r.sent[0]!.frame.case).toBe("start");
    expect(r.sent[0]!.frame.case === "start" && textOf(r.sent[0]!.frame.value.inputs[0])).toBe("hi");
    const models = scriptedModels(counterScript);
    const rep = await replayJournal(fx.events(), {
      sessionUid: "sess-000000000000000000000001",
      describe: async () => ({ name: "remote", harness: remote(echoPeer).harness, descriptor: await r.harness.describe() }),
      defaultHarness: "remote",
      models,
    });
    expect(rep).toMatchObject({ ok: true, outputs: ["answer #1"], modelCalls: 0 });
  });

  it("tunnel: a remote harness's failure ends the turn with ERROR carrying its description", async () => {
    const fx = newLog();
    const r = remote((f, emit) => {
      if (f.frame.case === "start")
        emit({ kind: EventKind.EVENT_END, body: { case: "end", value: { state: "FAILED", error: { description: "remote boom" } } } as never });
    });
    const out = await liveTurn(fx, r.harness, scriptedModels(echoScript), ["x"], { name: "remote" });
    expect(out).toMatchObject({ kind: "failed", message: "remote boom" });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "ERROR"]);
  });

  it("tunnel: a disconnect mid-turn fails the execution and leaves it for Resume", async () => {
    const fx = newLog();
    const r = remote((f, emit, end) => {
      if (f.frame.case === "start") emit({ kind: EventKind.EVENT_MODEL_CALL, body: { case: "model", value: { model: "m", id: "c", messages: [] } } as never });
      else end();
    });
    const out = await liveTurn(fx, r.harness, scriptedModels(echoScript), ["x"], { name: "remote" });
    expect(out).toMatchObject({ kind: "failed" });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "ERROR"]);
  });

  it("tunnel: host-owned kinds from the harness are a protocol error", async () => {
    const fx = newLog();
    const r = remote((f, emit) => {
      if (f.frame.case === "start")
        emit({ kind: EventKind.EVENT_APPROVAL_RESULT, body: { case: "approvalResult", value: { toolCallId: "x", approved: true } } as never });
    });
    const out = await liveTurn(fx, r.harness, scriptedModels(echoScript), ["x"], { name: "remote" });
    expect(out).toMatchObject({ kind: "failed" });
    expect(r.closed[0]).toMatch(/protocol error/);
  });

  it("tunnel: a host-executed tool call is answered with the receipt (id = call id)", async () => {
    const fx = newLog();
    const ex = fakeExecutor();
    const r = remote((f, emit) => {
      if (f.frame.case === "start") {
        emit({
          kind: EventKind.EVENT_TOOL_CALL,
          body: { case: "tool", value: { id: "t1", tool: "lookup", args: { q: 1 }, mediation: Mediation.CONTROLLER_MEDIATED, idempotencyKey: "k" } } as never,
        });
      } else if (f.frame.case === "tool") {
        expect(f.frame.value.id).toBe("t1");
        emit({ kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } as never });
      }
    });
    const out = await liveTurn(fx, r.harness, scriptedModels(echoScript), [], { name: "remote", tools: toolDeps(ex.executor) });
    expect(out).toEqual({ kind: "completed" });
    expect(ex.effects.size).toBe(1);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "TOOL_RESULT", "END"]);
  });

  it("tunnel: a gated call sends park; the harness's PARKED ack ends the stream with nothing terminal journaled", async () => {
    const fx = newLog();
    let parkFrame: ControllerFrame | undefined;
    const r = remote((f, emit) => {
      if (f.frame.case === "start") {
        emit({
          kind: EventKind.EVENT_TOOL_CALL,
          body: { case: "tool", value: { id: "g1", tool: "pay", mediation: Mediation.REQUIRES_APPROVAL, idempotencyKey: "k" } } as never,
        });
      } else if (f.frame.case === "park") {
        parkFrame = f;
        emit({ kind: EventKind.EVENT_PARKED, body: { case: "parked", value: f.frame.value } as never });
      }
    });
    const out = await liveTurn(fx, r.harness, scriptedModels(echoScript), [], { name: "remote", tools: toolDeps(fakeExecutor().executor) });
    expect(out).toMatchObject({ kind: "parked", gate: { toolCallId: "g1", requestSeq: 3n } });
    expect(parkFrame?.frame.case === "park" && parkFrame.frame.value).toMatchObject({ toolCallId: "g1", requestSeq: 3n });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST"]);
  });

  it("tunnel: a wrong park ack is refused, and the committed request is still preserved", async () => {
    const fx = newLog();
    const r = remote((f, emit) => {
      if (f.frame.case === "start") {
        emit({
          kind: EventKind.EVENT_TOOL_CALL,
          body: { case: "tool", value: { id: "g1", tool: "pay", mediation: Mediation.REQUIRES_APPROVAL, idempotencyKey: "k" } } as never,
        });
      } else if (f.frame.case === "park") {
        emit({ kind: EventKind.EVENT_PARKED, body: { case: "parked", value: { ...f.frame.value, toolCallId: "foreign" } } as never });
      }
    });
    const out = await liveTurn(fx, r.harness, scriptedModels(echoScript), [], { name: "remote", tools: toolDeps(fakeExecutor().executor) });
    expect(out).toMatchObject({ kind: "parked" });
    expect(r.closed[0]).toMatch(/different approval/);
    expect(fx.kinds()).toEqual(["EXECUTION_START", "TOOL_CALL", "APPROVAL_REQUEST"]);
  });
});
