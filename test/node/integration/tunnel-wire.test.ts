/**
 * The host's side of the tunnel seen from the wire, against a real `wrangler dev`: a bare peer
 * (the `ws` package and the generated messages, no SDK) checks what the SDK would hide. One
 * connection carries several executions at once; a harness that never answers Describe is
 * UNAVAILABLE within the bound and nothing is written; frames on a stream whose execution the host
 * has let go of are refused and never reach the journal.
 */
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventKind, type EventSchema, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability, type ControllerFrame } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { HarnessMessageSchema, HostMessageSchema, type HostMessage } from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { sleep, startDevServer, type DevServer } from "../../../scripts/dev-server.js";

let server: DevServer;
let client: SessionsClient;
const peers: Peer[] = [];

beforeAll(async () => {
  server = await startDevServer();
  client = new SessionsClient({ server: server.url });
});

afterAll(async () => {
  for (const p of peers) p.ws.terminate();
  await server?.dispose();
});

/** A harness connection driven by hand: everything the host sends is kept in `received`. */
class Peer {
  readonly received: HostMessage[] = [];
  readonly ws: WebSocket;
  readonly closed: Promise<number>;

  constructor(
    readonly name: string,
    o: { answerDescribe: boolean },
  ) {
    this.ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/harness/v1/connect?name=${name}`, "agentsessions.harness.v1");
    this.closed = new Promise((ok) => this.ws.on("close", (code) => ok(code)));
    // A socket error (the host reset the connection) is followed by "close", which the tests
    // await; without a listener, ws would throw it as an uncaught exception and fail the run.
    this.ws.on("error", () => undefined);
    this.ws.on("message", (data: Buffer) => {
      const m = fromBinary(HostMessageSchema, new Uint8Array(data));
      this.received.push(m);
      if (m.message.case === "describe" && o.answerDescribe) {
        this.send({ message: { case: "described", value: { id: m.message.value.id, descriptor: descriptor(name) } } });
      }
    });
    this.ws.on("open", () => this.send({ message: { case: "hello", value: { name, descriptor: descriptor(name), agent: "wire-test" } } }));
    peers.push(this);
  }

  send(m: MessageInitShape<typeof HarnessMessageSchema>): void {
    this.ws.send(toBinary(HarnessMessageSchema, create(HarnessMessageSchema, m)));
  }

  async until<T>(pick: (ms: HostMessage[]) => T | undefined, what: string): Promise<T> {
    // A deadline in time, not in polls, and a generous one: the host answers in milliseconds when
    // the machine is quiet and in seconds when it is busy.
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      const got = pick(this.received);
      if (got !== undefined) return got;
      await sleep(25);
    }
    throw new Error(`timed out waiting for ${what}; received ${this.received.map((m) => m.message.case).join(", ")}`);
  }

  welcomed(): Promise<unknown> {
    return this.until((ms) => ms.find((m) => m.message.case === "welcome"), "Welcome");
  }

  /** The Start frames received so far, by stream id. */
  starts(): Map<string, ControllerFrame> {
    const out = new Map<string, ControllerFrame>();
    for (const m of this.received) {
      if (m.message.case === "frame" && m.message.value.frame?.frame.case === "start") out.set(m.message.value.stream, m.message.value.frame);
    }
    return out;
  }

  /** Sends an OUTPUT then END COMPLETED on `stream` for its execution. */
  finish(stream: string, executionId: string, text: string): void {
    this.event(stream, {
      executionId,
      kind: EventKind.EVENT_OUTPUT,
      body: { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text } } }] } },
    });
    this.event(stream, { executionId, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } });
  }

  event(stream: string, event: MessageInitShape<typeof EventSchema>): void {
    this.send({ message: { case: "event", value: { stream, event } } });
  }
}

function descriptor(name: string) {
  return { id: name, version: "1", capabilities: { resumability: Resumability.STATELESS_REPLAY } };
}

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}
const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));

describe("the tunnel from the wire", () => {
  it("wire: one connection carries two executions at once, each on its own stream", async () => {
    const peer = new Peer("wire-multi", { answerDescribe: true });
    await peer.welcomed();
    const a = (await client.create({ harness: "wire-multi" })).metadata!.uid;
    const b = (await client.create({ harness: "wire-multi" })).metadata!.uid;
    const turns = [client.exec({ session: a, inputs: ["for a"] }), client.exec({ session: b, inputs: ["for b"] })];
    // Both Starts arrive before either execution is answered: the streams are open side by side.
    const starts = await peer.until(() => (peer.starts().size === 2 ? peer.starts() : undefined), "two Starts");
    const bySession = new Map([...starts].map(([stream, f]) => [f.session, { stream, f }]));
    expect([...bySession.keys()].sort()).toEqual([a, b].sort());
    for (const [uid, { stream, f }] of bySession) peer.finish(stream, f.executionId, `done ${uid === a ? "a" : "b"}`);
    const [ra, rb] = await Promise.all(turns);
    expect(ra!.outputs).toEqual(["done a"]);
    expect(rb!.outputs).toEqual(["done b"]);
    expect(kinds(await records(a))).toEqual(["EXECUTION_START", "INPUT", "OUTPUT", "END"]);
  });

  it("wire: a harness that never answers Describe is UNAVAILABLE within the bound, and nothing is written", async () => {
    const peer = new Peer("wire-silent", { answerDescribe: false });
    await peer.welcomed();
    const uid = (await client.create({ harness: "wire-silent" })).metadata!.uid;
    const err = await client.exec({ session: uid, inputs: ["anyone?"] }).catch((e) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect((err as ConnectError).rawMessage).toContain("did not describe itself within 10 s");
    expect(peer.received.some((m) => m.message.case === "describe")).toBe(true);
    expect((await client.get(uid)).lastSeq).toBe(0n);
  }, 60_000);

  it("wire: after Cancel the host closes the stream; events sent on it later are refused and never journaled", async () => {
    const peer = new Peer("wire-stale", { answerDescribe: true });
    await peer.welcomed();
    const uid = (await client.create({ harness: "wire-stale" })).metadata!.uid;
    const turn = client.exec({ session: uid, inputs: ["slow"] }).catch((e) => ConnectError.from(e));
    const [stream, start] = await peer.until(() => [...peer.starts()][0], "Start");
    await client.cancel(uid);
    const closed = await peer.until((ms) => ms.find((m) => m.message.case === "close" && m.message.value.stream === stream), "StreamClose");
    expect(closed.message.case).toBe("close");
    expect(((await turn) as ConnectError).code).toBe(Code.Canceled);
    const before = await records(uid);

    peer.finish(stream, start.executionId, "too late");
    const refused = await peer.until((ms) => ms.find((m) => m.message.case === "error" && m.message.value.stream === stream), "TunnelError");
    expect(refused.message.case === "error" && refused.message.value.code).toBe(5);
    await sleep(200);
    const after = await records(uid);
    expect(after.map((r) => r.seq)).toEqual(before.map((r) => r.seq));
    expect(kinds(after)).not.toContain("OUTPUT");
    // The connection itself is still good: the next turn runs on it.
    const next = client.exec({ session: uid, inputs: ["again"] });
    const [s2, f2] = await peer.until(() => [...peer.starts()].find(([s]) => s !== stream), "a second Start");
    peer.finish(s2, f2.executionId, "on time");
    expect((await next).outputs).toEqual(["on time"]);
  });
});
