/**
 * The fuzz suite's tunnel side (docs/tunnel.md): harness connections that send random bytes, text
 * frames, truncated or mutated HarnessMessages, 10+ byte varints, oversized messages and deeply
 * nested events, before and after a valid Hello, on streams that do not exist; and a live peer that
 * answers real executions with hostile but decodable events (host-owned kinds, unknown kinds,
 * bodies that do not match, wrong execution ids, END in any state).
 *
 * Oracle: refusals before the upgrade are 4xx with a Connect JSON body; everything the host sends
 * decodes as a HostMessage; the host closes only with 1000, 1008 (protocol error) or 1009 (too
 * big), never 1011 or an abnormal close; no socket error. One exception, the platform's: after a
 * message over the 1 MiB a Worker accepts, workerd drops the connection, and on a busy machine the
 * drop can overtake its 1009 close frame (an abnormal 1006); that is not the host's doing.
 */
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import WebSocket from "ws";
import { HarnessMessageSchema, HostMessageSchema, type HostMessage } from "../../../proto/gen/agentsessions/edge/v1/tunnel_pb.js";
import { EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { message } from "./requests.js";
import { randomJson } from "./json-gen.js";
import type { Rng } from "./rng.js";
import { BYTE_MUTATIONS, concat, deepStruct, hugeVarint, lenField, mutateBytes, tag, utf8 } from "./wire.js";

export const SUBPROTOCOL = "agentsessions.harness.v1";
const GOOD_CLOSES = new Set([1000, 1005, 1008, 1009]);
/** The largest WebSocket message a Worker accepts (docs/tunnel.md "Framing"). */
const PLATFORM_MESSAGE_LIMIT = 1024 * 1024;

export const descriptor = (name: string) => ({ id: name, version: "1", capabilities: { resumability: Resumability.STATELESS_REPLAY } });

/** One harness connection, recording everything the host does to it. */
export class FuzzPeer {
  readonly ws: WebSocket;
  readonly received: HostMessage[] = [];
  readonly findings: string[] = [];
  readonly opened: Promise<boolean>;
  readonly closed: Promise<number>;
  closeCode: number | undefined;
  private _weClosed = false;
  /** How many messages this peer sent, and the largest (for a finding's context). */
  private _sent = 0;
  private _largest = 0;

  constructor(base: string, query: string, protocol: string | undefined, onMessage?: (m: HostMessage) => void) {
    this.ws = new WebSocket(`${base.replace(/^http/, "ws")}/harness/v1/connect?${query}`, protocol ? [protocol] : []);
    this.opened = new Promise((ok) => {
      this.ws.once("open", () => ok(true));
      this.ws.once("unexpected-response", (_req, res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if ((res.statusCode ?? 0) >= 500 || !/^\{"code":"[a-z_]+"/.test(text))
            this.findings.push(`refusal ${res.statusCode} without a Connect error: ${text.slice(0, 200)}`);
          ok(false);
        });
      });
    });
    this.closed = new Promise((ok) => this.ws.on("close", (code) => ok((this.closeCode = code))));
    this.ws.on("error", (e) => {
      if (!/Unexpected server response|closed before the connection was established/.test(e.message)) this.findings.push(`socket error: ${e.message}`);
    });
    this.ws.on("message", (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return void this.findings.push("the host sent a text message");
      try {
        const m = fromBinary(HostMessageSchema, new Uint8Array(data));
        this.received.push(m);
        onMessage?.(m);
      } catch (e) {
        this.findings.push(`a host message that does not decode: ${(e as Error).message}`);
      }
    });
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  raw(data: Uint8Array | string): void {
    if (!this.open) return;
    this._sent++;
    this._largest = Math.max(this._largest, typeof data === "string" ? Buffer.byteLength(data) : data.length);
    this.ws.send(data);
  }

  send(m: MessageInitShape<typeof HarnessMessageSchema>): void {
    this.raw(toBinary(HarnessMessageSchema, create(HarnessMessageSchema, m)));
  }

  hello(name: string): void {
    this.send({ message: { case: "hello", value: { name, descriptor: descriptor(name), agent: "fuzz" } } });
  }

  /** Drops the connection without a close frame: a harness that dies. */
  kill(): void {
    this._weClosed = true;
    this.ws.terminate();
  }

  /** Closes (if the host has not), then checks how the connection ended. */
  async finish(): Promise<string[]> {
    if (this.ws.readyState === WebSocket.CONNECTING) this.kill();
    else if (this.open) {
      this._weClosed = true;
      this.ws.close(1000);
    }
    await Promise.race([this.closed, new Promise((ok) => setTimeout(ok, 5_000))]);
    if (this.ws.readyState !== WebSocket.CLOSED) this.ws.terminate();
    const platformDrop = this.closeCode === 1006 && this._largest > PLATFORM_MESSAGE_LIMIT;
    if (!this._weClosed && this.closeCode !== undefined && !GOOD_CLOSES.has(this.closeCode) && !platformDrop) {
      this.findings.push(`the host closed with ${this.closeCode} (after ${this._sent} messages, the largest ${this._largest} bytes)`);
    }
    return this.findings;
  }
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** One connection of hostile traffic; returns its findings. */
export async function tunnelCase(base: string, rng: Rng, name: string): Promise<string[]> {
  const how = rng.weighted<string>([
    [1, "refused"],
    [3, "garbage-first"],
    [6, "hello-then-garbage"],
  ]);
  if (how === "refused") {
    const [query, protocol] = rng.pick<[string, string | undefined]>([
      [`name=${name}`, undefined],
      [`name=${name}`, "nope.v0"],
      ["name=Bad_Name", SUBPROTOCOL],
      ["name=echo", SUBPROTOCOL],
      ["", SUBPROTOCOL],
      [`name=${"a".repeat(64)}`, SUBPROTOCOL],
      [`name=${encodeURIComponent("fz\u00e9")}`, SUBPROTOCOL],
    ]);
    const p = new FuzzPeer(base, query, protocol);
    await p.opened;
    return p.finish();
  }
  const p = new FuzzPeer(base, `name=${name}`, SUBPROTOCOL);
  if (!(await p.opened)) return [...(await p.finish()), `could not connect as ${name}`];
  if (how === "hello-then-garbage") {
    p.hello(name);
    // Garbage goes after the Welcome, however long a busy machine takes to send it (a deadline in time, not in polls).
    for (const deadline = Date.now() + 15_000; !p.received.some((m) => m.message.case === "welcome") && p.open && Date.now() < deadline; ) await sleep(10);
  }
  for (let n = rng.range(1, 8); n > 0 && p.open; n--) {
    p.raw(hostileMessage(rng, name));
    await sleep(rng.int(3) * 5);
  }
  await sleep(50);
  return p.finish();
}

/** A message the host must refuse (or shrug off) without breaking. */
export function hostileMessage(rng: Rng, name: string): Uint8Array | string {
  const event = (stream: string) =>
    toBinary(HarnessMessageSchema, create(HarnessMessageSchema, { message: { case: "event", value: { stream, event: hostileEvent(rng, rng.hex(16)) } } }));
  switch (rng.int(10)) {
    case 0:
      return rng.bytes(rng.range(0, 64));
    case 1:
      return rng.pick(["", "hello", "{}", "\u0000"]);
    case 2:
      return concat(tag(rng.range(1, 4), 2), hugeVarint(rng));
    case 3:
      // Over the Workers limit of 1 MiB per WebSocket message: the host closes with 1009.
      return rng.chance(0.3) ? new Uint8Array(1024 * 1024 + rng.range(1, 1000)) : concat(lenField(4, lenField(1, utf8("x".repeat(500_000)))));
    case 4:
      return lenField(2, lenField(2, lenField(8, lenField(2, lenField(3, lenField(1, deepStruct(rng.pick([40, 100, 500])))))))); // event.event.message.parts.data
    case 5: {
      const b = event(rng.pick(["", rng.hex(24), "x".repeat(1000)]));
      return mutateBytes(rng, b, rng.pick(BYTE_MUTATIONS), [1]);
    }
    case 6:
      return toBinary(HarnessMessageSchema, create(HarnessMessageSchema, { message: { case: "described", value: { id: rng.hex(12), error: rng.word() } } }));
    case 7:
      return rng.chance(0.5)
        ? toBinary(
            HarnessMessageSchema,
            create(HarnessMessageSchema, { message: { case: "hello", value: { name: rng.chance(0.5) ? name : rng.word(), descriptor: descriptor(name) } } }),
          )
        : toBinary(HarnessMessageSchema, create(HarnessMessageSchema, { message: { case: "goodbye", value: { reason: rng.word() } } }));
    default:
      return event(rng.pick(["", rng.hex(24), rng.word()]));
  }
}

const MATCHING_KIND: Record<string, number> = { message: 3, model: 2, tool: 4, result: 5, usage: 8, end: 10, lifecycle: 9, error: 11, parked: 13 };

/** An event a broken or malicious harness might send during an execution. */
export function hostileEvent(rng: Rng, executionId: string): MessageInitShape<typeof EventSchema> {
  const kind = rng.pick([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 99, -1]);
  const body = rng.pick<MessageInitShape<typeof EventSchema>["body"]>([
    { case: "message", value: message(rng) as never },
    {
      case: "model",
      value: {
        model: rng.pick(["echo", "", "nope"]),
        id: rng.hex(16),
        messages: [message(rng) as never],
        params: { t: rng.word() },
        tools: rng.chance(0.3) ? [{ name: rng.word(), description: rng.word(), inputSchema: { type: "object", x: randomJson(rng) } }] : [],
        toolChoice: rng.chance(0.3) ? { mode: rng.pick([0, 1, 2, 3, 42]) as never, name: rng.word() } : undefined,
      },
    },
    // Close to the 1 MiB a WebSocket message may carry, and past the journal's 1 MB per event.
    { case: "message", value: { role: "assistant", parts: [{ part: { case: "text", value: { text: "z".repeat(rng.pick([200_000, 1_000_100])) } } }] } },
    {
      case: "tool",
      value: { id: rng.word(), tool: rng.word(), args: { a: randomJson(rng) }, mediation: rng.pick([0, 1, 2, 3, 77]) as never, idempotencyKey: rng.word() },
    },
    {
      case: "result",
      value: { id: rng.word(), output: { a: randomJson(rng) }, code: rng.pick([0, 1, 2, 55]) as never, approvalRequestSeq: BigInt(rng.range(-5, 50)) },
    },
    { case: "usage", value: { model: rng.word(), inputTokens: rng.pick([-1n, 2n ** 63n - 1n, 5n]), outputTokens: -(2n ** 63n) } },
    {
      case: "end",
      value: {
        state: rng.pick(["COMPLETED", "FAILED", "", "CANCELED", rng.word()]),
        error: rng.chance(0.5) ? { code: -1, description: rng.word() } : undefined,
      },
    },
    { case: "lifecycle", value: { kind: rng.pick([0, 1, 2, 3, 99]) as never, detail: rng.word() } },
    { case: "executionStart", value: { config: rng.bytes(4), inputCount: 5n, harness: "echo" } },
    { case: "parked", value: { executionId, toolCallId: rng.word(), requestSeq: 3n } },
    { case: "error", value: { code: 13, description: rng.word() } },
    undefined,
  ]);
  // Mostly a kind that matches the body, so the event gets past the shape checks and is recorded.
  const matching = body?.case ? MATCHING_KIND[body.case] : undefined;
  return {
    executionId: rng.chance(0.9) ? executionId : rng.hex(16),
    kind: matching !== undefined && rng.chance(0.7) ? matching : kind,
    body,
    schemaVersion: rng.pick([0, 1, -1, 2 ** 31 - 1]),
  };
}

export { EventSchema };
