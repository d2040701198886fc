/**
 * The fuzz suite's live tunnel harness: it serves real executions of a few sessions and answers
 * each Start with hostile but decodable events (tunnel-fuzz.ts `hostileEvent`), now and then a
 * garbage frame, and finally END in some state or a dropped connection. Some turns it holds open
 * instead, while the suite fires the calls that race a running turn (an overlapping Exec, Suspend,
 * Resume, Fork, Cancel with right and wrong ids, Approve, Verify, Replay, now and then Delete).
 * This reaches the host code that turns harness events into records, which garbage on unknown
 * streams never does, and the guards around a running execution.
 *
 * Oracle: every answer passes oracle.ts, except that INTERNAL is the contract's answer to a harness
 * failing mid-turn (docs/behaviour.md §4.12 "harness or model failure mid-turn (ERROR journaled)"), so
 * an Exec may end INTERNAL when its stream carried the ERROR record. The caller verifies the chains.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { EventKind, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ExecRequestSchema, Sessions, type ExecUpdate, type ForkResponse, type Session } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { Audit } from "../../../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { judge, send, type Verdict } from "./oracle.js";
import { Rng } from "./rng.js";
import { FuzzPeer, hostileEvent, hostileMessage, SUBPROTOCOL } from "./tunnel-fuzz.js";
import { envelope } from "./wire.js";

export interface LiveResult {
  findings: string[];
  /** Every session the live harness ran or forked: the caller verifies their chains. */
  sessions: string[];
  outcomes: Record<string, number>;
}

/** Shared between the peer's message handler and the turn loop. */
interface Control {
  /** Hold the next Start open (send nothing) instead of answering it. */
  hold: boolean;
  held?: { stream: string; executionId: string };
}

const json = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

async function unary(base: string, method: string, body: unknown): Promise<Verdict> {
  const m = Sessions.methods.find((x) => x.name === method)!;
  return judge(m, await send(base, `/agentsessions.v1.Sessions/${method}`, json(body), "application/json"));
}

export async function liveTurns(base: string, seed: number, name: string, turns: number): Promise<LiveResult> {
  const result: LiveResult = { findings: [], sessions: [], outcomes: {} };
  const control: Control = { hold: false };
  let peer = await connect(base, seed, name, control);
  const running: string[] = [];
  const newSession = async () => {
    const v = await unary(base, "CreateSession", { session: { harness: name } });
    const uid = (v.messages[0] as Session | undefined)?.metadata?.uid;
    if (!uid) throw new Error(`live peer: cannot create a session on ${name}: ${v.outcome} ${v.findings.join("; ")}`);
    result.sessions.push(uid);
    return uid;
  };
  for (let i = 0; i < 3; i++) running.push(await newSession());
  const decided = new Set<string>();
  for (let t = 0; t < turns; t++) {
    const rng = Rng.forCase(seed, 300_000 + t);
    if (!peer.open) {
      result.findings.push(...(await peer.finish()));
      peer = await connect(base, seed + t, name, control);
    }
    const slot = t % running.length;
    const uid = running[slot]!;
    const note = (what: string, v: Verdict, allowInternal = false) => {
      const fs = v.findings.filter((f) => !(allowInternal && f.startsWith("unclassified failure: internal")));
      result.findings.push(...fs.map((f) => `live turn ${t} (seed ${seed}) ${what} on ${uid}: ${f}`));
      const key = process.env.FUZZ_VERBOSE === "1" ? `${what} ${v.outcome} ${(v.detail ?? "").slice(0, 100)}` : `${what} ${v.outcome}`;
      result.outcomes[key] = (result.outcomes[key] ?? 0) + 1;
    };
    // A decided gate is finished by an inputless Exec (the re-drive); otherwise a new turn.
    const redrive = decided.delete(uid);
    control.hold = rng.chance(0.35);
    control.held = undefined;
    const req = create(ExecRequestSchema, {
      session: uid,
      inputs: redrive ? [] : [{ role: "user", parts: [{ part: { case: "text", value: { text: `turn ${t}` } } }] }],
      deadlineUnix: BigInt(Math.floor(Date.now() / 1000) + 30),
    });
    const exec = send(base, "/agentsessions.v1.Sessions/Exec", envelope(0, toBinary(ExecRequestSchema, req)), "application/connect+proto");
    if (control.hold) {
      // Wait in time, not in polls: on a busy machine the Start can take seconds, and a turn that
      // skipped its race because the wait ran out would make the run depend on the load.
      for (const deadline = Date.now() + 20_000; !control.held && Date.now() < deadline; ) await sleep(10);
      const held = control.held as Control["held"]; // set by the peer's handler meanwhile
      if (held) {
        const deleted = await raceTurn(base, rng, uid, held.executionId, note, result);
        if (deleted) running[slot] = await newSession();
        peer.send({
          message: {
            case: "event",
            value: {
              stream: held.stream,
              event: { executionId: held.executionId, kind: EventKind.EVENT_END, body: { case: "end", value: { state: "COMPLETED" } } },
            },
          },
        });
      }
      control.hold = false;
    }
    const v = judge(Sessions.method.exec, await exec);
    note("Exec", v, failedMidTurn(v));
    if (await decidePending(base, rng, uid, note)) decided.add(uid);
  }
  // Recovery and replay run the same stream protocol against the journal, through the same peer.
  for (const uid of running) {
    if (!peer.open) peer = await connect(base, seed + turns, name, control);
    const resumed = await unary(base, "Resume", { session: uid });
    result.findings.push(...allowFailedTurn(resumed).map((f) => `live Resume (seed ${seed}) on ${uid}: ${f}`));
    const m = Audit.method.verify;
    const verified = judge(m, await send(base, `/${m.parent.typeName}/${m.name}`, json({ session: uid, replay: true }), "application/json"));
    result.findings.push(...verified.findings.map((f) => `live Verify replay (seed ${seed}) on ${uid}: ${f}`));
  }
  result.findings.push(...(await peer.finish()));
  return result;
}

/** A unary answer's findings, less INTERNAL for a re-driven turn that failed with ERROR journaled (§4.12). */
function allowFailedTurn(v: Verdict): string[] {
  return v.findings.filter((f) => !(f.startsWith("unclassified failure: internal") && (v.detail ?? "").includes("an ERROR record was journaled")));
}

/** An Exec stream that journaled ERROR: INTERNAL is then the contract's answer (§4.12). */
function failedMidTurn(v: Verdict): boolean {
  const records = (v.messages as ExecUpdate[]).flatMap((u) => (u.update.case === "record" ? [u.update.value as LogRecord] : []));
  return records.some((r) => r.event?.kind === EventKind.EVENT_ERROR);
}

type Note = (what: string, v: Verdict, allowInternal?: boolean) => void;

/** The calls that race a running turn; true when one of them deleted the session. */
async function raceTurn(base: string, rng: Rng, uid: string, executionId: string, note: Note, result: LiveResult): Promise<boolean> {
  const calls: [string, unknown][] = [
    ["Exec", undefined],
    ["Suspend", { session: uid }],
    ["Resume", { session: uid }],
    ["Fork", { session: uid, count: rng.range(1, 2) }],
    ["Approve", { session: uid, executionId, toolCallId: rng.word(4), requestSeq: "2", approved: rng.chance(0.5) }],
    ["Cancel", { session: uid, executionId: rng.hex(16), reason: rng.word() }],
    ["GetSession", { uid }],
  ];
  if (rng.chance(0.5)) calls.push(["Cancel", { session: uid, executionId: rng.chance(0.5) ? executionId : "", reason: rng.pick(["USER", "", rng.word()]) }]);
  const deleting = rng.chance(0.15);
  if (deleting) calls.push(["DeleteSession", { uid }]);
  const order = calls.sort(() => rng.next() - 0.5);
  await Promise.all(
    order.map(async ([method, body]) => {
      if (method === "Exec") {
        // An overlapping turn on the same session: refused, never run beside the first.
        const req = create(ExecRequestSchema, { session: uid, inputs: [{ role: "user", parts: [{ part: { case: "text", value: { text: "overlap" } } }] }] });
        const a = await send(base, "/agentsessions.v1.Sessions/Exec", envelope(0, toBinary(ExecRequestSchema, req)), "application/connect+proto");
        // It runs when a racing Cancel ended the first turn already; then it may fail mid-turn.
        const v = judge(Sessions.method.exec, a);
        return note("racing Exec", v, failedMidTurn(v));
      }
      const v = await unary(base, method, body);
      note(`racing ${method}`, v);
      if (method === "Fork") for (const c of (v.messages[0] as ForkResponse | undefined)?.children ?? []) result.sessions.push(c.metadata!.uid);
    }),
  );
  return deleting;
}

/**
 * A session parked on an approval gets hostile Approve tuples (near misses of the real one, which
 * must be refused without INTERNAL), then the real decision, so later turns can run.
 */
async function decidePending(base: string, rng: Rng, uid: string, note: Note): Promise<boolean> {
  const pending = ((await unary(base, "GetSession", { uid })).messages[0] as Session | undefined)?.pendingApproval;
  if (!pending) return false;
  const real = {
    session: uid,
    executionId: pending.executionId,
    toolCallId: pending.toolCallId,
    requestSeq: pending.requestSeq.toString(),
    approved: rng.chance(0.5),
  };
  for (const body of [
    { ...real, requestSeq: (pending.requestSeq + BigInt(rng.pick([1, -1, 100]))).toString() },
    { ...real, toolCallId: real.toolCallId + rng.word(2) },
    { ...real, executionId: rng.hex(16) },
    { ...real, identity: { principal: rng.word() } },
    // The real tuple with a reason past the journal's 1 MB per event, or past SQLite's 2 MB.
    { ...real, reason: "r".repeat(rng.pick([1_100_000, 3_000_000])) },
    real,
    { ...real, approved: !real.approved },
  ]) {
    note("Approve", await unary(base, "Approve", body));
  }
  return true;
}

async function connect(base: string, seed: number, name: string, control: Control): Promise<FuzzPeer> {
  let streams = 0;
  let describes = 0;
  const peer: FuzzPeer = new FuzzPeer(base, `name=${name}`, SUBPROTOCOL, (m) => {
    if (m.message.case === "describe") {
      // Mostly the same descriptor; now and then an error, or one that changed version or needs
      // memory snapshots (refused by CanPlace), as a harness that was redeployed would.
      const rng = Rng.forCase(seed, 600_000 + describes++);
      const descriptor = {
        id: name,
        version: rng.weighted([
          [8, "1"],
          [1, "2"],
        ] as const),
        capabilities: {
          resumability: rng.weighted([
            [9, 1],
            [1, 2],
          ] as const),
        },
      };
      peer.send({
        message: { case: "described", value: rng.chance(0.05) ? { id: m.message.value.id, error: rng.word() } : { id: m.message.value.id, descriptor } },
      });
      return;
    }
    if (m.message.case !== "frame") return;
    const { stream, frame } = m.message.value;
    const f = frame?.frame;
    const executionId = frame?.executionId ?? "";
    if (f?.case === "park") {
      // Acknowledge the park (or not quite), so the host never waits out its bound.
      const rng = Rng.forCase(seed, 500_000 + streams);
      const ref = rng.chance(0.7) ? f.value : { ...f.value, requestSeq: f.value.requestSeq + 1n };
      peer.send({ message: { case: "event", value: { stream, event: { executionId, kind: EventKind.EVENT_PARKED, body: { case: "parked", value: ref } } } } });
      return;
    }
    if (f?.case !== "start") return;
    if (control.hold && !control.held) {
      control.held = { stream, executionId };
      return;
    }
    const rng = Rng.forCase(seed, 400_000 + streams++);
    for (let k = rng.range(0, 4); k > 0; k--) {
      if (rng.chance(0.08)) peer.raw(hostileMessage(rng, name));
      else peer.send({ message: { case: "event", value: { stream, event: hostileEvent(rng, executionId) } } });
    }
    if (rng.chance(0.1)) return peer.kill(); // a harness that dies mid-turn
    const state = rng.weighted([
      [7, "COMPLETED"],
      [2, "FAILED"],
      [1, ""],
    ] as const);
    peer.send({ message: { case: "event", value: { stream, event: { executionId, kind: EventKind.EVENT_END, body: { case: "end", value: { state } } } } } });
  });
  if (await peer.opened) peer.hello(name);
  for (const deadline = Date.now() + 30_000; !peer.received.some((m) => m.message.case === "welcome") && Date.now() < deadline; ) await sleep(10);
  if (!peer.received.some((m) => m.message.case === "welcome")) throw new Error(`live peer: no Welcome (${peer.findings.join("; ")})`);
  return peer;
}
