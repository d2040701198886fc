/**
 * Tail end to end (issue 15; docs/follow.md) against a real `wrangler dev` and a real HTTP
 * stand-in for an OpenAI-compatible provider that streams slowly: a dropped Exec re-attached
 * with Tail, a follower across a kill -9 and a recovery, 50 followers of one turn, a follower that
 * never reads, tenants and roles, from_seq past the head, follow=false, and the curl form.
 *
 * The crash test SIGKILLs the server, so every test here shares this file's own server.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { connect, createServer, type Socket } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TailEnd_Reason, TailRequestSchema, TailResponseSchema } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { envelopeFrame } from "../../../proto/record-envelopes.js";
import { EventKind, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { textOf } from "../../../proto/messages.js";
import { SessionsClient } from "../../../sdk/client.js";
import type { TailEvent } from "../../../sdk/tail.js";
import { sleep } from "../../../scripts/dev-server.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";
import { kindsOf, startHost, type Host } from "../support/host.js";
import { AGENTCTL } from "../cli/run-agentctl.js";
import { ROOT } from "../../../scripts/dev-server.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const KEYS = {
  aWrite: { token: "tok-tail-a-write", tenant: "tenant-a", roles: ["read", "write"] },
  aRead: { token: "tok-tail-a-read", tenant: "tenant-a", roles: ["read"] },
  aNone: { token: "tok-tail-a-approve", tenant: "tenant-a", roles: ["approve"] },
  bRead: { token: "tok-tail-b-read", tenant: "tenant-b", roles: ["read", "write"] },
};
const QUEUE_BOUND = 2 * 1024 * 1024;

let fake: FakeOpenAi;
let host: Host;
let writer: SessionsClient;
let reader: SessionsClient;

const as = (k: keyof typeof KEYS, o: { fetch?: typeof fetch; binary?: boolean } = {}) => new SessionsClient({ server: host.url, token: KEYS[k].token, ...o });

beforeAll(async () => {
  fake = await startFakeOpenAi();
  host = await startHost({
    token: KEYS.aWrite.token,
    vars: {
      MODEL_BASE_URL: fake.url,
      MODEL_DEFAULT: "stand-in-1",
      AUTH_MODE: "keys",
      AUTH_KEYS: JSON.stringify(Object.entries(KEYS).map(([id, k]) => ({ id, sha256: sha(k.token), tenant: k.tenant, principal: id, roles: k.roles }))),
      TAIL_HEARTBEAT_MS: "500",
      TAIL_MAX_QUEUE_BYTES: String(QUEUE_BOUND),
      RATE_LIMIT_PER_SECOND: "0",
      // The slow-reader test fills the queue with large inputs: they stay in their records.
      BLOB_INLINE_MAX_BYTES: "900000",
    },
  });
  writer = host.client;
  reader = as("aRead");
});

afterAll(async () => {
  await host?.stop();
  await fake?.close();
});

async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (cond()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const seqs = (rs: readonly LogRecord[]) => rs.map((r) => r.seq);
const outputText = (rs: readonly LogRecord[]) =>
  rs.flatMap((r) => (r.event?.kind === EventKind.EVENT_OUTPUT && r.event.body.case === "message" ? [textOf(r.event.body.value)] : [])).join("");
const isEnd = (r: LogRecord) => r.event?.kind === EventKind.EVENT_END || r.event?.kind === EventKind.EVENT_ERROR;

/** A follower that collects until `stop(records)` says so (or its signal aborts). */
function follow(client: SessionsClient, uid: string, stop: (rs: LogRecord[]) => boolean, fromSeq = 1n) {
  const records: LogRecord[] = [];
  const deltas: string[] = [];
  const ac = new AbortController();
  let reconnects = 0;
  const done = (async () => {
    for await (const ev of client.tail(uid, { fromSeq, signal: ac.signal, backoffMs: 200, onReconnect: () => reconnects++ }) as AsyncIterable<TailEvent>) {
      if (ev.kind === "record") records.push(ev.record);
      else deltas.push(ev.delta.chunk);
      if (stop(records)) break;
    }
  })();
  return {
    records,
    deltas,
    done,
    abort: () => ac.abort(),
    get reconnects() {
      return reconnects;
    },
  };
}

/** A fetch whose Exec response can be cut off by the test, as a dropped connection would be. */
function droppingFetch() {
  let cut: (() => void) | undefined;
  const f: typeof fetch = async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (!url.endsWith("/Exec")) return fetch(input, init);
    const ac = new AbortController();
    const res = await fetch(input, { ...init, signal: ac.signal });
    const body = res.body!.getReader();
    let ctl!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        ctl = c;
      },
      async pull(c) {
        try {
          const { done, value } = await body.read();
          if (done) c.close();
          else c.enqueue(value);
        } catch {
          // cut below
        }
      },
    });
    cut = () => {
      ac.abort();
      ctl.error(new TypeError("terminated"));
    };
    return new Response(stream, { status: res.status, headers: res.headers });
  };
  return { fetch: f, drop: () => cut?.() };
}

/** A TCP proxy in front of the host whose Exec connections the test can cut, as a network would. */
async function cuttingProxy(target: string) {
  const { hostname, port } = new URL(target);
  const exec = new Set<Socket>();
  const all = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    all.add(client);
    all.add(upstream);
    client.once("data", (first: Buffer) => {
      if (first.toString("latin1").startsWith("POST /agentsessions.v1.Sessions/Exec")) exec.add(client);
    });
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
      all.delete(client);
      all.delete(upstream);
    };
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const addr = server.address();
  return {
    url: `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`,
    cutExec: () => {
      for (const s of exec) s.destroy();
    },
    close: () =>
      new Promise<void>((ok) => {
        for (const s of all) s.destroy();
        server.close(() => ok());
      }),
  };
}

describe("Tail against wrangler dev", () => {
  it("tail: follow=false delivers every record once, in order, and ends at the head", async () => {
    const a = await writer.exec({ inputs: ["one"] });
    const uid = a.session.metadata!.uid;
    await writer.exec({ session: uid, inputs: ["two"] });
    const got: LogRecord[] = [];
    for await (const ev of reader.tail(uid, { follow: false })) if (ev.kind === "record") got.push(ev.record);
    expect(got).toEqual(await host.records(uid));
    expect(kindsOf(got)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END", "EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    const tail: LogRecord[] = [];
    for await (const ev of reader.tail(uid, { follow: false, fromSeq: 7n })) if (ev.kind === "record") tail.push(ev.record);
    expect(seqs(tail)).toEqual([7n, 8n, 9n, 10n]);
  });

  it("tail: Connect JSON over plain fetch (the curl form) ends with an end item naming the next seq", async () => {
    const a = await writer.exec({ inputs: ["json"] });
    const uid = a.session.metadata!.uid;
    const body = JSON.stringify({ session: uid, fromSeq: "4", follow: false });
    const frame = new Uint8Array(5 + body.length);
    new DataView(frame.buffer).setUint32(1, body.length);
    frame.set(new TextEncoder().encode(body), 5);
    const res = await fetch(`${host.url}/agentsessions.edge.v1.Tail/Tail`, {
      method: "POST",
      headers: { "content-type": "application/connect+json", authorization: `Bearer ${KEYS.aRead.token}` },
      body: frame,
    });
    expect(res.status).toBe(200);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const messages: { flag: number; json: Record<string, unknown> }[] = [];
    for (let at = 0; at < bytes.length; ) {
      const len = new DataView(bytes.buffer, at + 1, 4).getUint32(0);
      messages.push({ flag: bytes[at]!, json: JSON.parse(new TextDecoder().decode(bytes.subarray(at + 5, at + 5 + len))) });
      at += 5 + len;
    }
    expect(messages.map((m) => Object.keys(m.json)[0])).toEqual(["record", "record", "end", undefined]);
    expect(messages[0]!.json).toMatchObject({ record: { seq: "4", event: { kind: "EVENT_OUTPUT" } } });
    expect(messages[2]!.json).toEqual({ end: { reason: "REASON_HEAD", reconnectFromSeq: "6" } });
    expect(messages[3]!.flag).toBe(2);
  });

  it("tail: another tenant's session is NOT_FOUND, a key without read is PERMISSION_DENIED, from_seq past the head is OUT_OF_RANGE", async () => {
    const a = await writer.exec({ inputs: ["mine"] });
    const uid = a.session.metadata!.uid;
    const first = async (c: SessionsClient, fromSeq?: bigint) => {
      try {
        for await (const _ of c.tail(uid, { follow: false, fromSeq, maxAttempts: 1 })) return undefined;
        return undefined;
      } catch (e) {
        return ConnectError.from(e);
      }
    };
    expect((await first(as("bRead")))?.code).toBe(Code.NotFound);
    expect((await first(as("aNone")))?.code).toBe(Code.PermissionDenied);
    const past = await first(reader, 7n);
    expect(past?.code).toBe(Code.OutOfRange);
    expect(past?.rawMessage).toBe("from_seq 7 is past the session's head (seq 5): the next record will be seq 6; Tail from at most that");
    // The seq the next commit takes is a valid start: it waits for that record.
    const f = follow(reader, uid, (rs) => rs.some(isEnd), 6n);
    await writer.exec({ session: uid, inputs: ["next"] });
    await f.done;
    expect(seqs(f.records)).toEqual([6n, 7n, 8n, 9n, 10n]);
  });

  it("exec: a dropped Exec stream re-attaches with Tail; records after the drop arrive once and the turn's text resumes", async () => {
    const created = await writer.create({ harness: "chat" });
    const uid = created.metadata!.uid;
    fake.next = () => ({ kind: "slow", chunkMs: 150, chunks: 16 });
    const drop = droppingFetch();
    const client = as("aWrite", { fetch: drop.fetch });
    const deltasBefore: string[] = [];
    const deltasAfter: string[] = [];
    let reattached = false;
    const r = await client.exec({
      session: uid,
      inputs: ["go"],
      onRecord: (rec) => {
        if (rec.event?.kind === EventKind.EVENT_MODEL_CALL) setTimeout(() => drop.drop(), 700);
      },
      onDelta: (d) => (reattached ? deltasAfter : deltasBefore).push(d.chunk),
      onReattach: () => {
        reattached = true;
      },
    });
    fake.next = () => ({ kind: "answer" });
    expect(reattached).toBe(true);
    expect(deltasBefore.length).toBeGreaterThan(0);
    expect(deltasAfter.length).toBeGreaterThan(0);
    const journal = await host.records(uid);
    expect(r.records).toEqual(journal);
    expect(kindsOf(r.records)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    // Nothing shown twice, nothing missing: the deltas spell the committed answer exactly.
    expect([...deltasBefore, ...deltasAfter].join("")).toBe(outputText(journal));
  });

  it("agentctl exec: a connection cut mid-turn re-attaches and prints every record once, exit 0", async () => {
    const created = await writer.create({ harness: "chat" });
    const uid = created.metadata!.uid;
    const proxy = await cuttingProxy(host.url);
    fake.next = () => ({ kind: "slow", chunkMs: 150, chunks: 16 });
    try {
      const child = spawn(process.execPath, [AGENTCTL, "--server", proxy.url, "--token", KEYS.aWrite.token, "exec", "--session", uid, "--input", "go"], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
      const code = new Promise<number | null>((ok) => child.once("close", (c) => ok(c)));
      await until("MODEL_CALL printed", () => out.includes("EVENT_MODEL_CALL"));
      await sleep(700);
      proxy.cutExec();
      const exit = await Promise.race([code, sleep(20_000).then(() => "hung")]);
      expect(exit, `stdout: ${out}\nstderr: ${err}`).toBe(0);
      expect(err).toMatch(/exec: the stream dropped \(.*\); reattaching from seq 4\n/);
      const lines = out.trimEnd().split("\n");
      expect(lines[0]).toBe(`session ${uid}`);
      expect(lines.slice(1).map((l) => l.split("  ")[1])).toEqual(["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_MODEL_CALL", "EVENT_OUTPUT", "EVENT_END"]);
      // The streamed text (stderr, stdout being a pipe) spells the committed answer once.
      const answer = outputText(await host.records(uid));
      expect(err.replace(/exec: the stream dropped.*\n/, "").replace(/\n/g, "")).toBe(answer);
    } finally {
      fake.next = () => ({ kind: "answer" });
      await proxy.close();
    }
  });

  it("tail: a follower across a kill -9 and a recovery reconnects by itself and sees every record once", async () => {
    const created = await writer.create({ harness: "chat" });
    const uid = created.metadata!.uid;
    fake.next = () => ({ kind: "hold" });
    // Until Resume's own LIFECYCLE(RESUME), after the recovered turn's records.
    const f = follow(reader, uid, (rs) => rs.some((r) => r.event?.kind === EventKind.EVENT_LIFECYCLE));
    const turn = writer.exec({ session: uid, inputs: ["crash"], reattach: false }).catch((e: unknown) => e);
    await until("MODEL_CALL reaches the follower", () => f.records.some((r) => r.event?.kind === EventKind.EVENT_MODEL_CALL));
    await host.kill();
    fake.releaseHeld();
    fake.next = () => ({ kind: "answer" });
    expect(await turn).toBeInstanceOf(ConnectError);
    await host.restart();
    await until("the follower reconnects", () => f.reconnects > 0);
    await writer.resume(uid);
    await f.done;
    const journal = await host.records(uid);
    expect(f.records).toEqual(journal);
    expect(new Set(seqs(f.records)).size).toBe(f.records.length);
    expect(kindsOf(journal)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END", "LIFECYCLE"]);
  });

  it("tail: 50 followers of one running turn all see the same records and deltas", async () => {
    const created = await writer.create({ harness: "chat" });
    const uid = created.metadata!.uid;
    const followers = Array.from({ length: 50 }, () => follow(reader, uid, (rs) => rs.some(isEnd)));
    fake.next = () => ({ kind: "slow", chunkMs: 60, chunks: 12 });
    await writer.exec({ session: uid, inputs: ["many"] });
    fake.next = () => ({ kind: "answer" });
    await Promise.all(followers.map((f) => f.done));
    const journal = await host.records(uid);
    for (const f of followers) {
      expect(f.records).toEqual(journal);
      expect(f.deltas.join("")).toBe(outputText(journal));
    }
  });

  it("tail: a follower that never reads is cut off past the queue bound, and the turns and other followers carry on", async () => {
    const a = await writer.exec({ inputs: ["start"] });
    const uid = a.session.metadata!.uid;
    // A raw stream that is not read until the turns are done.
    const body = JSON.stringify({ session: uid, fromSeq: "1", follow: true });
    const frame = new Uint8Array(5 + body.length);
    new DataView(frame.buffer).setUint32(1, body.length);
    frame.set(new TextEncoder().encode(body), 5);
    const slow = await fetch(`${host.url}/agentsessions.edge.v1.Tail/Tail`, {
      method: "POST",
      headers: { "content-type": "application/connect+json", authorization: `Bearer ${KEYS.aRead.token}` },
      body: frame,
    });
    // The same in binary: the object's own stream, relayed by workerd (worker/record-stream-route.ts).
    const slowBinary = await fetch(`${host.url}/agentsessions.edge.v1.Tail/Tail`, {
      method: "POST",
      headers: { "content-type": "application/connect+proto", authorization: `Bearer ${KEYS.aRead.token}` },
      body: envelopeFrame(0, toBinary(TailRequestSchema, create(TailRequestSchema, { session: uid, fromSeq: 1n, follow: true }))) as Uint8Array<ArrayBuffer>,
    });
    // Far more than the bound and than what the buffers between the object and this process take
    // in while nothing reads (9-16 MB measured here): 40 turns make a journal of about 32 MB.
    const turns = 40;
    const big = "x".repeat(400_000);
    const fast = follow(reader, uid, (rs) => rs.filter(isEnd).length === turns + 1);
    for (let i = 0; i < turns; i++) await writer.exec({ session: uid, inputs: [`${i}${big}`] });
    await fast.done;
    const journal = await host.records(uid);
    expect(fast.records).toEqual(journal);
    expect(journal.filter(isEnd)).toHaveLength(turns + 1);
    // Now read the stalled stream: contiguous records from 1, then the cut-off notice.
    const text = new Uint8Array(await slow.arrayBuffer());
    const items: Record<string, { seq?: string; reason?: string; reconnectFromSeq?: string }>[] = [];
    for (let at = 0; at < text.length; ) {
      const len = new DataView(text.buffer, at + 1, 4).getUint32(0);
      if (text[at] === 0) items.push(JSON.parse(new TextDecoder().decode(text.subarray(at + 5, at + 5 + len))));
      at += 5 + len;
    }
    const recs = items.filter((i) => i.record).map((i) => BigInt(i.record!.seq!));
    const end = items.at(-1)!.end!;
    expect(end.reason).toBe("REASON_SLOW");
    expect(recs).toEqual(Array.from({ length: recs.length }, (_, i) => BigInt(i + 1)));
    expect(BigInt(end.reconnectFromSeq!)).toBe(BigInt(recs.length + 1));
    expect(recs.length).toBeLessThan(journal.length);
    // The binary stream: contiguous records from 1, the cut-off notice, then the stream's OK end.
    const bin = new Uint8Array(await slowBinary.arrayBuffer());
    const frames: { flags: number; data: Uint8Array }[] = [];
    for (let at = 0; at < bin.length; ) {
      const len = new DataView(bin.buffer, at + 1, 4).getUint32(0);
      frames.push({ flags: bin[at]!, data: bin.subarray(at + 5, at + 5 + len) });
      at += 5 + len;
    }
    const binItems = frames.filter((f) => f.flags === 0).map((f) => fromBinary(TailResponseSchema, f.data).item);
    const binRecs = binItems.flatMap((i) => (i.case === "record" ? [i.value.seq] : []));
    expect(binRecs).toEqual(Array.from({ length: binRecs.length }, (_, i) => BigInt(i + 1)));
    expect(binItems.at(-1)).toMatchObject({ case: "end", value: { reason: TailEnd_Reason.SLOW, reconnectFromSeq: BigInt(binRecs.length + 1) } });
    expect(binRecs.length).toBeLessThan(journal.length);
    expect(frames.at(-1)!.flags).toBe(0x02);
    expect(new TextDecoder().decode(frames.at(-1)!.data)).toBe("{}");
    // A new follower catches up over all of it (catch-up pages far over the bound) and goes live
    // without being cut off: its last page does not count against the bound.
    const late = follow(reader, uid, (rs) => rs.length === journal.length);
    await late.done;
    expect(late.records).toEqual(journal);
    expect(late.reconnects).toBe(0);
  }, 240_000);

  it("tail: an idle follow gets heartbeats (the SDK hides them) and records still arrive after them", async () => {
    const a = await writer.exec({ inputs: ["idle"] });
    const uid = a.session.metadata!.uid;
    let beats = 0;
    const ac = new AbortController();
    const seen: bigint[] = [];
    const done = (async () => {
      for await (const res of reader.rawTail.tail({ session: uid, fromSeq: 1n, follow: true }, { signal: ac.signal })) {
        if (res.item.case === "heartbeat") beats++;
        if (res.item.case === "record") seen.push(res.item.value.seq);
        if (res.item.case === "end") expect(res.item.value.reason).not.toBe(TailEnd_Reason.UNSPECIFIED);
        if (seen.length === 10) return;
      }
    })();
    await until("two heartbeats", () => beats >= 2);
    await writer.exec({ session: uid, inputs: ["after"] });
    await done;
    ac.abort();
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i + 1)));
  });
});
