/**
 * Checklist checklist §8.3 (tool arguments), checklist §8.4 (execution start) and checklist §8.5 #28 over the wire, against a
 * real `wrangler dev` with a stand-in model provider and a stand-in tool executor that count what
 * they are asked. Each harness is a bare WebSocket peer (the `ws` package and the generated
 * messages, no SDK), so it sends exactly what a raw peer in any language could (NaN in a Struct,
 * a foreign park ack) and sees exactly what the host sends (Start, receipts, StreamClose).
 */
import { create, equals, fromBinary, toBinary, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventKind, type EventSchema, LogRecordSchema, Mediation, type LogRecord, type ToolResult } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability, StartSchema, type ControllerFrame, type Start } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { HarnessMessageSchema, HostMessageSchema, type HostMessage } from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { textOf } from "../../../proto/messages.js";
import { SessionsClient } from "../../../sdk/client.js";
import { sleep, startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { startFakeExecutor, type FakeExecutor } from "../support/fake-executor.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";

let server: DevServer;
let client: SessionsClient;
let model: FakeOpenAi;
let executor: FakeExecutor;
const peers: WirePeer[] = [];

beforeAll(async () => {
  model = await startFakeOpenAi();
  executor = await startFakeExecutor();
  server = await startDevServer({ vars: { MODEL_BASE_URL: model.url, MODEL_DEFAULT: "m", TOOL_EXECUTOR_URL: executor.url } });
  client = new SessionsClient({ server: server.url });
});

afterAll(async () => {
  for (const p of peers) p.ws.terminate();
  await server?.dispose();
  await executor?.close();
  await model?.close();
});

/** One stream as the peer saw it: every frame the host sent on it, in order. */
interface WireStream {
  id: string;
  session: string;
  executionId: string;
  frames: ControllerFrame[];
  /** What the behaviour remembers between frames. */
  state: string;
  event(e: Pick<MessageInitShape<typeof EventSchema>, "kind" | "body">): void;
}

type Behaviour = (s: WireStream, f: ControllerFrame) => void;

/** A harness connection driven by hand; every HostMessage is kept in `received`. */
class WirePeer {
  readonly ws: WebSocket;
  readonly received: HostMessage[] = [];
  readonly streams: WireStream[] = [];
  readonly welcomed: Promise<void>;

  constructor(
    readonly name: string,
    private readonly behave: Behaviour,
  ) {
    this.ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/harness/v1/connect?name=${name}`, "agentsessions.harness.v1");
    let welcome!: () => void;
    let refuse!: (e: Error) => void;
    this.welcomed = new Promise((ok, fail) => ((welcome = ok), (refuse = fail)));
    this.welcomed.catch(() => undefined);
    // A socket error (the host reset the connection) ends the peer; without a listener, ws would
    // throw it as an uncaught exception and fail the whole run rather than this test.
    this.ws.on("error", (e) => refuse(e));
    const descriptor = { id: name, version: "1", capabilities: { resumability: Resumability.STATELESS_REPLAY, forkSafe: true } };
    this.ws.on("open", () => this.send({ message: { case: "hello", value: { name, descriptor, agent: "conformance-peer" } } }));
    this.ws.on("message", (data: Buffer) => {
      const m = fromBinary(HostMessageSchema, new Uint8Array(data));
      this.received.push(m);
      if (m.message.case === "welcome") welcome();
      if (m.message.case === "describe") this.send({ message: { case: "described", value: { id: m.message.value.id, descriptor } } });
      if (m.message.case === "frame" && m.message.value.frame) this.onFrame(m.message.value.stream, m.message.value.frame);
    });
    peers.push(this);
  }

  private onFrame(id: string, f: ControllerFrame): void {
    let s = this.streams.find((x) => x.id === id);
    if (!s) {
      const stream: WireStream = {
        id,
        session: f.session,
        executionId: f.executionId,
        frames: [],
        state: "",
        event: (e) => this.send({ message: { case: "event", value: { stream: id, event: { executionId: stream.executionId, ...e } } } }),
      };
      this.streams.push((s = stream));
    }
    s.frames.push(f);
    this.behave(s, f);
  }

  send(m: MessageInitShape<typeof HarnessMessageSchema>): void {
    this.ws.send(toBinary(HarnessMessageSchema, create(HarnessMessageSchema, m)));
  }

  of(uid: string): WireStream[] {
    return this.streams.filter((s) => s.session === uid);
  }

  async until<T>(pick: () => T | undefined, what: string): Promise<T> {
    for (let i = 0; i < 800; i++) {
      const got = pick();
      if (got !== undefined) return got;
      await sleep(25);
    }
    throw new Error(`timed out waiting for ${what}; received ${this.received.map((m) => m.message.case).join(", ")}`);
  }
}

const text = (t: string) => ({ role: "assistant", parts: [{ part: { case: "text" as const, value: { text: t } } }] });
const output = (s: WireStream, t: string) => s.event({ kind: EventKind.EVENT_OUTPUT, body: { case: "message", value: text(t) } });
const end = (s: WireStream) => s.event({ kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } });
const fail = (s: WireStream, why: string) =>
  s.event({ kind: EventKind.EVENT_END, body: { case: "end", value: { state: "FAILED", error: { description: why } } } });
const startOf = (s: WireStream): Start => {
  const f = s.frames[0]!.frame;
  if (f.case !== "start") throw new Error(`stream ${s.id} did not open with Start`);
  return f.value;
};

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}
const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));
const bytes = (rs: LogRecord[]) => rs.map((r) => toBinary(LogRecordSchema, r));
const executorCalls = (uid: string) => executor.requests.filter((r) => r.body.session === uid).length;
const receipts = (s: WireStream): ToolResult[] => s.frames.flatMap((f) => (f.frame.case === "tool" ? [f.frame.value] : []));

function nested(depth: number): JsonValue {
  let v: JsonValue = 1;
  for (let i = 0; i < depth; i++) v = { d: v };
  return v;
}

/** Arguments that are not plain JSON, as a raw peer can put them in a protobuf Struct. */
const BAD_ARGS: Record<string, JsonObject> = {
  nan: { amount: NaN },
  inf: { amount: Infinity },
  "-inf": { nested: { list: [1, -Infinity] } },
  big: { id: 2 ** 53 + 2 },
  deep: { deep: nested(40) },
};

/**
 * The tool-arguments harness. The first input names the plan: `bad-<kind>` sends a call with bad
 * arguments and, hearing the failed receipt, ends COMPLETED; `bad-<kind>-retry` then issues a valid
 * call instead. Any other input makes one valid call (`q` = `argOf(session)`), outputs "continued"
 * and ends, unless the session is in `swallowFirst` (a bad call first, its refusal swallowed) or
 * `interruptOnce` (it ends FAILED after the receipt, once).
 */
const swallowFirst = new Set<string>();
const interruptOnce = new Set<string>();
const argOf = new Map<string, string>();
const validCall = (s: WireStream) =>
  s.event({
    kind: EventKind.EVENT_TOOL_CALL,
    body: {
      case: "tool",
      value: {
        id: "c1",
        tool: "lookup",
        args: { q: argOf.get(s.session) ?? "x" },
        mediation: Mediation.CONTROLLER_MEDIATED,
        idempotencyKey: `${s.executionId}/c1`,
      },
    },
  });
const badCall = (s: WireStream, kind: string) =>
  s.event({
    kind: EventKind.EVENT_TOOL_CALL,
    body: {
      case: "tool",
      value: { id: "c1", tool: "lookup", args: BAD_ARGS[kind]!, mediation: Mediation.CONTROLLER_MEDIATED, idempotencyKey: `${s.executionId}/c1` },
    },
  });

const argsBehaviour: Behaviour = (s, f) => {
  if (f.frame.case === "start") {
    const plan = textOf(f.frame.value.inputs[0]);
    const bad = /^bad-(.+?)(-retry)?$/.exec(plan);
    if (bad) {
      s.state = bad[2] ? "bad-retry" : "bad";
      badCall(s, bad[1]!);
    } else if (swallowFirst.has(s.session)) {
      s.state = "bad-retry";
      badCall(s, "nan");
    } else {
      s.state = "valid";
      validCall(s);
    }
  } else if (f.frame.case === "tool") {
    if (s.state === "bad") {
      output(s, "handled the refusal");
      end(s);
    } else if (s.state === "bad-retry") {
      s.state = "valid";
      validCall(s);
    } else if (interruptOnce.delete(s.session)) {
      fail(s, "interrupted after the receipt");
    } else {
      output(s, "continued");
      end(s);
    }
  }
};

/** The execution-start harness: one model call with the last input; then "continued", or (once) FAILED. */
const startsBehaviour: Behaviour = (s, f) => {
  if (f.frame.case === "start") {
    const last = f.frame.value.inputs.at(-1);
    s.event({
      kind: EventKind.EVENT_MODEL_CALL,
      body: {
        case: "model",
        value: { model: "m", id: `m-${s.id}`, messages: [{ role: "user", parts: [{ part: { case: "text", value: { text: textOf(last) } } }] }] },
      },
    });
  } else if (f.frame.case === "model") {
    if (interruptOnce.delete(s.session)) fail(s, "interrupted after the model answered");
    else {
      output(s, "continued");
      end(s);
    }
  }
};

/** Parks on a gated call and acknowledges with a foreign call id. */
const foreignAckBehaviour: Behaviour = (s, f) => {
  if (f.frame.case === "start") {
    s.event({
      kind: EventKind.EVENT_TOOL_CALL,
      body: {
        case: "tool",
        value: { id: "g1", tool: "pay", args: { amount: 5 }, mediation: Mediation.REQUIRES_APPROVAL, idempotencyKey: `${s.executionId}/g1` },
      },
    });
  } else if (f.frame.case === "park") {
    s.event({ kind: EventKind.EVENT_PARKED, body: { case: "parked", value: { ...f.frame.value, toolCallId: "foreign" } } });
  }
};

async function connect(name: string, behave: Behaviour): Promise<WirePeer> {
  const p = new WirePeer(name, behave);
  await p.welcomed;
  return p;
}

describe("tool arguments from a raw remote peer (checklist §8.3)", () => {
  let peer: WirePeer;
  beforeAll(async () => {
    peer = await connect("wire-args", argsBehaviour);
  });

  for (const kind of Object.keys(BAD_ARGS)) {
    it(`arguments with ${kind} in the Struct: Exec fails, the executor never runs, no TOOL_CALL, TOOL_RESULT or END is journaled (checklist §8.3 #18 #19)`, async () => {
      const uid = (await client.create({ harness: "wire-args" })).metadata!.uid;
      const err = await client.exec({ session: uid, inputs: [`bad-${kind}`] }).catch((e) => ConnectError.from(e));
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).rawMessage).toMatch(/not plain JSON/);
      // The peer heard the refusal as a failed receipt; ending COMPLETED after it did not help.
      const [stream] = peer.of(uid);
      expect(receipts(stream!)).toMatchObject([{ id: "c1", isError: true }]);
      expect(executorCalls(uid)).toBe(0);
      const rs = await records(uid);
      expect(kinds(rs)).toEqual(["EXECUTION_START", "INPUT", "ERROR"]);
      expect(await client.verify(uid)).toMatchObject({ chainOk: true });
    });
  }

  it("live: a peer that swallows the refusal (a failed receipt) and then makes a valid call still fails; the executor never runs; only EXECUTION_START, INPUT, ERROR (checklist §8.3 #20)", async () => {
    const uid = (await client.create({ harness: "wire-args" })).metadata!.uid;
    const err = await client.exec({ session: uid, inputs: ["bad-nan-retry"] }).catch((e) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).rawMessage).toMatch(/not plain JSON/);
    expect(executorCalls(uid)).toBe(0);
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "ERROR"]);
    // The valid call did reach the host: it was refused, not lost.
    const [stream] = peer.of(uid);
    expect(stream!.state).toBe("valid");
  });

  it("replay: a swallowed refusal before the recorded valid call diverges; nothing is written, the executor is not called (checklist §8.3 #20)", async () => {
    const uid = (await client.create({ harness: "wire-args" })).metadata!.uid;
    expect((await client.exec({ session: uid, inputs: ["plain"] })).outputs).toEqual(["continued"]);
    expect(executorCalls(uid)).toBe(1);
    const before = bytes(await records(uid));
    swallowFirst.add(uid);
    const audit = await client.verify(uid, { replay: true });
    swallowFirst.delete(uid);
    expect(audit).toMatchObject({ chainOk: true, replayOk: false });
    expect(audit.divergence).toMatch(/not plain JSON|diverged/);
    expect(peer.of(uid)).toHaveLength(2);
    expect(executorCalls(uid)).toBe(1);
    expect(bytes(await records(uid))).toEqual(before);
  });

  it("resume: a swallowed refusal before the recorded valid call diverges; only ERROR is appended, the executor is not called again (checklist §8.3 #20)", async () => {
    const uid = (await client.create({ harness: "wire-args" })).metadata!.uid;
    interruptOnce.add(uid);
    await client.exec({ session: uid, inputs: ["plain"] }).catch((e) => ConnectError.from(e));
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "TOOL_CALL", "TOOL_RESULT", "ERROR"]);
    expect(executorCalls(uid)).toBe(1);
    const before = await records(uid);
    swallowFirst.add(uid);
    const err = await client.resume(uid).catch((e) => ConnectError.from(e));
    swallowFirst.delete(uid);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).rawMessage).toMatch(/not plain JSON|diverged/);
    expect(peer.of(uid)).toHaveLength(2);
    expect(executorCalls(uid)).toBe(1);
    const after = await records(uid);
    expect(bytes(after.slice(0, before.length))).toEqual(bytes(before));
    expect(kinds(after.slice(before.length)).every((k) => k === "ERROR")).toBe(true);
    expect(kinds(after)).not.toContain("END");
    expect(await client.verify(uid)).toMatchObject({ chainOk: true });
  });

  // Inside the recorded prefix a call the host would refuse is a divergence at the recorded call
  // (objects/controller/recorded-sink.ts), not the live refusal.
  it("replay and resume name the swallowed refusal a divergence at the recorded call (ErrReplayDiverged) (checklist §8.3 #20)", async () => {
    const uid = (await client.create({ harness: "wire-args" })).metadata!.uid;
    await client.exec({ session: uid, inputs: ["plain"] });
    swallowFirst.add(uid);
    const audit = await client.verify(uid, { replay: true });
    swallowFirst.delete(uid);
    expect(audit.divergence).toMatch(/^replay diverged at seq 3/);

    const cut = (await client.create({ harness: "wire-args" })).metadata!.uid;
    interruptOnce.add(cut);
    await client.exec({ session: cut, inputs: ["plain"] }).catch((e) => ConnectError.from(e));
    swallowFirst.add(cut);
    const err = await client.resume(cut).catch((e) => ConnectError.from(e));
    swallowFirst.delete(cut);
    expect((err as ConnectError).rawMessage).toMatch(/diverged at seq 3/);
  });

  it("a changed argument on replay diverges and the executor is not called (checklist §8.3 #21)", async () => {
    const uid = (await client.create({ harness: "wire-args" })).metadata!.uid;
    await client.exec({ session: uid, inputs: ["plain"] });
    const before = bytes(await records(uid));
    argOf.set(uid, "changed");
    const audit = await client.verify(uid, { replay: true });
    argOf.delete(uid);
    expect(audit).toMatchObject({ chainOk: true, replayOk: false });
    expect(audit.divergence).toMatch(/^replay diverged at seq 3: tool call mismatch/);
    expect(executorCalls(uid)).toBe(1);
    expect(bytes(await records(uid))).toEqual(before);
  });

  it("a changed argument on resume diverges and the executor is not called (checklist §8.3 #21)", async () => {
    const uid = (await client.create({ harness: "wire-args" })).metadata!.uid;
    interruptOnce.add(uid);
    await client.exec({ session: uid, inputs: ["plain"] }).catch((e) => ConnectError.from(e));
    expect(executorCalls(uid)).toBe(1);
    const before = (await records(uid)).length;
    argOf.set(uid, "changed");
    const err = await client.resume(uid).catch((e) => ConnectError.from(e));
    argOf.delete(uid);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).rawMessage).toMatch(/diverged at seq 3: tool call mismatch/);
    expect(executorCalls(uid)).toBe(1);
    const after = await records(uid);
    expect(kinds(after.slice(before))).toEqual(["ERROR"]);
    expect(kinds(after)).not.toContain("END");
  });
});

describe("execution start over the wire (checklist §8.4)", () => {
  // Byte-exact configs: binary, and whitespace that a JSON round trip would lose.
  const CONFIG_1 = new Uint8Array([0, 255, 32, 10, 9, 0x80, 0]);
  const CONFIG_2 = new TextEncoder().encode(' {\n\t"k" :  1 }\r\n ');
  let uid: string;
  let peer: WirePeer;
  /** The live Starts of turn 1 and 2, as the peer received them. */
  let live: Start[] = [];
  let journal: LogRecord[] = [];

  it("two turns (cursors 41, 42; the second interrupted), the store reopened: recovery sends the live Start again, whatever config and cursor the caller passes, with zero model calls (checklist §8.4 #22)", async () => {
    peer = await connect("wire-starts", startsBehaviour);
    uid = (await client.create({ harness: "wire-starts" })).metadata!.uid;
    const first = await client.exec({ session: uid, inputs: ["one"], config: CONFIG_1, resumeFromSeq: 41n });
    expect(first.outputs).toEqual([expect.stringMatching(/^answer #\d+: one$/), "continued"]);
    interruptOnce.add(uid);
    const cut = await client.exec({ session: uid, inputs: ["two"], config: CONFIG_2, resumeFromSeq: 42n }).catch((e) => ConnectError.from(e));
    expect(cut).toBeInstanceOf(ConnectError);
    expect(kinds(await records(uid)).slice(-5)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "ERROR"]);
    live = peer.of(uid).map(startOf);
    expect(live).toHaveLength(2);
    expect(live[0]).toMatchObject({ config: CONFIG_1, resumeFromSeq: 41n });
    expect(live[1]).toMatchObject({ config: CONFIG_2, resumeFromSeq: 42n });
    expect(live[1]!.history.length).toBeGreaterThan(0);

    // Reopen the store: the host restarts on the same storage; the harness dials in again.
    peer.ws.terminate();
    await server.restart();
    peer = await connect("wire-starts", startsBehaviour);
    const asked = model.requests.length;
    // An Exec with no inputs recovers the interrupted turn; its config and cursor are not used.
    const recovered = await client.exec({ session: uid, config: new TextEncoder().encode("wrong"), resumeFromSeq: 7n });
    expect(recovered.outputs).toEqual(["continued"]);
    expect(model.requests.length).toBe(asked);
    const [stream] = peer.of(uid);
    expect(equals(StartSchema, startOf(stream!), live[1]!)).toBe(true);
    expect(stream!.executionId).toBe(peer.of(uid)[0]!.frames[0]!.executionId);
    journal = await records(uid);
    expect(kinds(journal).slice(-2)).toEqual(["OUTPUT", "END"]);
    expect(journal.filter((r) => r.event!.kind === EventKind.EVENT_MODEL_CALL)).toHaveLength(2);
  });

  it("replay over the wire reproduces both live Starts, returns the recorded outputs, writes nothing and calls no model (checklist §8.4 #23)", async () => {
    expect(live).toHaveLength(2);
    const asked = model.requests.length;
    const audit = await client.verify(uid, { replay: true });
    expect(audit).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n, divergence: "" });
    expect(audit.outputs).toEqual([expect.stringMatching(/^answer #\d+: one$/), "continued", expect.stringMatching(/^answer #\d+: two$/), "continued"]);
    expect(model.requests.length).toBe(asked);
    const replayed = peer.of(uid).slice(1).map(startOf);
    expect(replayed).toHaveLength(2);
    expect(equals(StartSchema, replayed[0]!, live[0]!)).toBe(true);
    expect(equals(StartSchema, replayed[1]!, live[1]!)).toBe(true);
    expect(bytes(await records(uid))).toEqual(bytes(journal));
  });

  it("forks at the first turn's END and at head, replayed over the wire, reproduce the inherited live Starts; both chains verify (checklist §8.4 #24)", async () => {
    expect(live).toHaveLength(2);
    const firstEnd = journal.find((r) => r.event!.kind === EventKind.EVENT_END)!.seq;
    const [atEnd] = await client.fork(uid, { at: firstEnd });
    const [atHead] = await client.fork(uid);
    const asked = model.requests.length;
    for (const [child, want] of [
      [atEnd!.metadata!.uid, live.slice(0, 1)],
      [atHead!.metadata!.uid, live],
    ] as const) {
      const audit = await client.verify(child, { replay: true });
      expect(audit).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n });
      const starts = peer.of(child).map(startOf);
      expect(starts).toHaveLength(want.length);
      starts.forEach((s, i) => expect(equals(StartSchema, s, want[i]!)).toBe(true));
      // The inherited prefix is the parent's, record for record.
      const rs = await records(child);
      const n = want.length === 1 ? Number(firstEnd) : journal.length;
      expect(bytes(rs.slice(0, n))).toEqual(bytes(journal.slice(0, n)));
    }
    expect(model.requests.length).toBe(asked);
    expect(await client.verify(uid)).toMatchObject({ chainOk: true });
  });
});

describe("a foreign park ack over the wire (checklist §8.5 #28)", () => {
  let peer: WirePeer;
  beforeAll(async () => {
    peer = await connect("wire-foreign-ack", foreignAckBehaviour);
  });

  /** Runs a turn whose park the peer acks with a foreign call id; then sends END on the stream as an ordering barrier. */
  async function foreignAck() {
    const uid = (await client.create({ harness: "wire-foreign-ack" })).metadata!.uid;
    // A deadline well beyond the host's 10 s park-ack bound: the turn must end without either.
    const turn = await client.exec({ session: uid, inputs: ["pay"], deadlineUnix: BigInt(Math.floor(Date.now() / 1000) + 600) });
    const [stream] = peer.of(uid);
    // Anything the host sent on the stream before Exec returned arrives before the answer to this.
    end(stream!);
    const refused = await peer.until(
      () => peer.received.findIndex((m) => m.message.case === "error" && m.message.value.stream === stream!.id) + 1 || undefined,
      "TunnelError",
    );
    return { uid, turn, stream: stream!, before: peer.received.slice(0, refused - 1), error: peer.received[refused - 1]! };
  }

  it("a park acked with a foreign call id: Exec ends (no deadline hit), the stream is gone, the APPROVAL_REQUEST stays, nothing terminal, the chain verifies (checklist §8.5 #28)", async () => {
    const { uid, turn, stream, error } = await foreignAck();
    expect(stream.frames.map((f) => f.frame.case)).toEqual(["start", "park"]);
    // After the refusal the stream is gone: END sent on it is refused as unknown (5) and not journaled.
    expect(error.message.case === "error" && error.message.value.code).toBe(5);
    const rs = await records(uid);
    const request = rs.find((r) => r.event!.kind === EventKind.EVENT_APPROVAL_REQUEST)!;
    expect(request.event!.body.value).toMatchObject({ toolCallId: "g1" });
    const park = stream.frames[1]!.frame;
    expect(park.case === "park" && park.value).toMatchObject({ executionId: request.event!.executionId, toolCallId: "g1", requestSeq: request.seq });
    for (const k of ["END", "ERROR", "PARKED", "TOOL_RESULT"]) expect(kinds(rs)).not.toContain(k);
    expect(turn.finalSession!.pendingApproval).toMatchObject({ toolCallId: "g1", requestSeq: request.seq });
    expect(executorCalls(uid)).toBe(0);
    expect(await client.verify(uid)).toMatchObject({ chainOk: true });
  });

  // HarnessTunnel keeps a stream past PARKED until the session has checked the ack: a refused ack
  // is closed with its reason, an accepted one is forgotten without a StreamClose (docs/tunnel.md).
  it("the peer that acked with a foreign call id is told: StreamClose naming the refusal arrives before the stream is gone (checklist §8.5 #28)", async () => {
    const { stream, before } = await foreignAck();
    const closes = before.filter((m) => m.message.case === "close" && m.message.value.stream === stream.id);
    expect(closes).toHaveLength(1);
    expect(closes[0]!.message.case === "close" && closes[0]!.message.value.reason).toMatch(/different approval/);
  });
});
