/**
 * The tenant's count of running executions across a crash, against a real `wrangler dev` killed
 * with SIGKILL (its whole process group) and restarted on the same storage (issue 11 §1;
 * objects/limits/tenant-limits.ts). A turn that really runs counts; one that died with the host
 * never keeps the tenant out, and recovering a crashed session does not count it twice.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sleep } from "../../../scripts/dev-server.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";
import { type Host, startHost } from "../support/host.js";

const LIMIT = 4;
let fake: FakeOpenAi;
let host: Host;

beforeAll(async () => {
  fake = await startFakeOpenAi();
  host = await startHost({ vars: { TEST_HARNESSES: "1", MAX_CONCURRENT_EXECS: String(LIMIT) } });
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

interface HeldTurn {
  uid: string;
  gate: string;
  done: Promise<unknown>;
  /** What the turn's Exec ended with, once it has. */
  ended?: unknown;
}

/** Waits until every turn waits on its gate; a turn that ended first (say, refused) fails the wait with its error. */
async function untilHeld(turns: HeldTurn[]): Promise<void> {
  await until("every held turn to reach its gate", () => {
    const ended = turns.find((t) => t.ended !== undefined);
    if (ended) throw new Error(`a turn ended before reaching its gate: ${String(ended.ended)}`);
    return turns.every((t) => fake.gateRequests(t.gate) === 1);
  });
}

/** Starts a `hold` turn on a new session that stays running until its gate opens. */
async function heldTurn(tag: string): Promise<HeldTurn> {
  const s = await host.client.create({ harness: "hold", name: tag });
  const uid = s.metadata!.uid;
  const gate = `${tag}-${uid}`;
  const config = new TextEncoder().encode(JSON.stringify({ hold_url: `${fake.url}/hold/${gate}`, model: "echo" }));
  const turn: HeldTurn = { uid, gate, done: Promise.resolve() };
  turn.done = host.client.exec({ session: uid, inputs: [tag], config }).then(
    (r) => (turn.ended = r),
    (e: unknown) => (turn.ended = e),
  );
  return turn;
}

async function refusal(p: Promise<unknown>): Promise<ConnectError | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
}

describe("running executions across a crash", () => {
  it("leases: a full tenant refuses one more turn; after a SIGKILL and restart, recoveries and a full complement of new turns all run", async () => {
    const before = await Promise.all(Array.from({ length: LIMIT }, (_, i) => heldTurn(`a${i}`)));
    await untilHeld(before);

    // Really running turns count: one more is refused, and says why.
    const over = await refusal(host.client.exec({ harness: "echo", inputs: ["one too many"] }));
    expect(over?.code).toBe(Code.ResourceExhausted);
    expect(over?.rawMessage).toMatch(/already runs 4 executions/);
    // The crash: every held turn dies with the host, mid-turn.
    await host.kill();
    for (const t of before) fake.openGate(t.gate);
    await host.restart();
    // (Awaited after the restart: a client's stream to a killed server ends once the port answers again.)
    await Promise.all(before.map((t) => t.done));

    // Recovering crashed sessions (an inputless Exec and a Resume) takes their own slots over.
    const recovered = await host.client.exec({ session: before[0]!.uid });
    expect(recovered.records.map((r) => r.event?.executionId)).not.toContain("");
    expect(await host.kinds(before[0]!.uid)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    await host.client.raw.resume({ session: before[1]!.uid });
    expect((await host.kinds(before[1]!.uid)).slice(-2)).toEqual(["END", "LIFECYCLE"]);

    // As soon as the host answers, the tenant runs a full complement of new turns...
    const after = await Promise.all(Array.from({ length: LIMIT }, (_, i) => heldTurn(`b${i}`)));
    await untilHeld(after);
    // ...which count in turn.
    const again = await refusal(host.client.exec({ harness: "echo", inputs: ["still one too many"] }));
    expect(again?.code).toBe(Code.ResourceExhausted);

    for (const t of after) fake.openGate(t.gate);
    for (const r of await Promise.all(after.map((t) => t.done))) expect(r).not.toBeInstanceOf(Error);
    // And once they end, the slots are free again.
    await host.client.exec({ harness: "echo", inputs: ["room again"] });
  });

  it("kept slots: sessions that keep their slots after a turn never keep a full complement of new turns out, and give them up", async () => {
    // Each of these runs one turn and keeps its slot for its next turn (the tenant is at most half full).
    const quiet = [];
    for (let i = 0; i < 2; i++) {
      const s = await host.client.create({ harness: "echo", name: `quiet${i}` });
      await host.client.exec({ session: s.metadata!.uid, inputs: ["one turn"] });
      quiet.push(s.metadata!.uid);
    }
    const held = await Promise.all(Array.from({ length: LIMIT }, (_, i) => heldTurn(`k${i}`)));
    await untilHeld(held);
    const over = await refusal(host.client.exec({ harness: "echo", inputs: ["one too many"] }));
    expect(over?.rawMessage).toMatch(/already runs 4 executions/);
    // The quiet sessions gave their slots up when the limiter asked: their next turn asks again.
    const again = await refusal(host.client.exec({ session: quiet[0]!, inputs: ["not now"] }));
    expect(again?.code).toBe(Code.ResourceExhausted);
    for (const t of held) fake.openGate(t.gate);
    for (const r of await Promise.all(held.map((t) => t.done))) expect(r).not.toBeInstanceOf(Error);
    await host.client.exec({ session: quiet[0]!, inputs: ["now"] });
  });
});
