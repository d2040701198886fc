/**
 * `npm run campaign:crash [-- --cuts N]`: a scripted fault campaign (not part of npm test). It
 * kills the host's whole process group (SIGKILL) mid-turn, N times (default 20), at varied points
 * against a stand-in model, restarts it on the same storage, resumes the cut session, and checks:
 *
 * - verified: the chain of the cut session verifies, anchored at the head the Directory knows;
 * - lost: a record the client had received before the cut is missing or changed afterwards;
 * - extra model calls: provider requests the recovery made (at most one: the call that was cut);
 * - tenant blocked: right after the restart, the tenant cannot start its full complement of turns
 *   (MAX_CONCURRENT_EXECS) at once.
 *
 * The cut points rotate: while the model request is held open, mid-way through a slowly streamed
 * answer, after OUTPUT but before END (the test-only `hold` harness), and at a random moment of a
 * fast turn. One line per cut, then one summary line; exits 1 when any cut lost, over-called,
 * blocked or failed to verify.
 */
import { type Code, ConnectError } from "@connectrpc/connect";
import type { LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { sleep, startDevServer } from "../scripts/dev-server.js";
import { SessionsClient } from "../sdk/client.js";
import { startFakeOpenAi } from "../test/node/support/fake-openai.js";

const CUTS = Number(process.argv[process.argv.indexOf("--cuts") + 1] ?? "") || 20;
const LIMIT = 4;
const KINDS = ["model-held", "mid-stream", "after-output", "random"] as const;

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function main(): Promise<void> {
  const fake = await startFakeOpenAi();
  const server = await startDevServer({
    vars: { MODEL_BASE_URL: fake.url, MODEL_DEFAULT: "stand-in", TEST_HARNESSES: "1", MAX_CONCURRENT_EXECS: String(LIMIT) },
  });
  const client = new SessionsClient({ server: server.url });
  let verified = 0;
  let lost = 0;
  let extraMax = 0;
  let blocked = 0;
  const started = Date.now();
  try {
    for (let i = 0; i < CUTS; i++) {
      const kind = KINDS[i % KINDS.length]!;
      const harness = kind === "after-output" ? "hold" : "chat";
      const uid = (await client.create({ harness, name: `cut-${i}` })).metadata!.uid;
      const gate = `cut-${i}`;
      const config = kind === "after-output" ? new TextEncoder().encode(JSON.stringify({ hold_url: `${fake.url}/hold/${gate}` })) : undefined;
      fake.next = () => (kind === "model-held" ? { kind: "hold" } : kind === "mid-stream" ? { kind: "slow", chunkMs: 60, chunks: 12 } : { kind: "answer" });
      const before = fake.requests.length;

      // The records the client was told about before the cut: each was committed before it was sent.
      const acknowledged: LogRecord[] = [];
      const turn = (async () => {
        for await (const u of client.raw.exec({
          session: uid,
          inputs: [{ role: "user", parts: [{ part: { case: "text", value: { text: `turn ${i}` } } }] }],
          config,
        })) {
          if (u.update.case === "record") acknowledged.push(u.update.value);
        }
      })().catch(() => undefined);

      if (kind === "model-held") await until("the model request", () => fake.requests.length > before);
      else if (kind === "mid-stream") {
        await until("the model request", () => fake.requests.length > before);
        await sleep(60 + Math.floor(Math.random() * 500));
      } else if (kind === "after-output") await until("the harness's gate", () => fake.gateRequests(gate) > 0);
      else await sleep(Math.floor(Math.random() * 80));

      await server.kill();
      fake.releaseHeld();
      fake.openGate(gate);
      fake.next = () => ({ kind: "answer" });
      await server.restart();
      await turn;

      // Right after the restart: a full complement of new turns must start at once.
      const full = await fullComplement(client, fake, i);
      if (!full) blocked++;

      const beforeResume = fake.requests.length;
      const resumed = await client.resume(uid).then(
        () => "ok",
        (e: unknown) => ConnectError.from(e).rawMessage,
      );
      const extra = fake.requests.length - beforeResume;
      extraMax = Math.max(extraMax, extra);

      const after = new Map<bigint, string>();
      for await (const r of client.replay(uid)) after.set(r.seq, r.contentHash);
      const missing = acknowledged.filter((r) => after.get(r.seq) !== r.contentHash).length;
      lost += missing;
      const v = await client.verify(uid);
      if (v.chainOk) verified++;
      console.log(
        `cut ${String(i + 1).padStart(2)} ${kind.padEnd(12)} acknowledged=${acknowledged.length} after=${after.size} lost=${missing} extra_model_calls=${extra} verified=${v.chainOk} resume=${resumed === "ok" ? "ok" : JSON.stringify(resumed)} full_complement=${full}`,
      );
    }
  } finally {
    await server.dispose();
    await fake.close();
  }
  console.log(`(${CUTS} cuts in ${((Date.now() - started) / 1000).toFixed(0)} s)`);
  console.log(`cuts=${CUTS} verified=${verified} lost=${lost} extra_model_calls_max=${extraMax} tenant_blocked=${blocked}`);
  if (verified !== CUTS || lost > 0 || extraMax > 1 || blocked > 0) process.exit(1);
}

/** Whether LIMIT turns start at once (each held at its gate until all have started). */
async function fullComplement(client: SessionsClient, fake: Awaited<ReturnType<typeof startFakeOpenAi>>, cut: number): Promise<boolean> {
  const gates = Array.from({ length: LIMIT }, (_, k) => `full-${cut}-${k}`);
  const turns = await Promise.all(
    gates.map(async (gate) => {
      const uid = (await client.create({ harness: "hold", name: gate })).metadata!.uid;
      const config = new TextEncoder().encode(JSON.stringify({ hold_url: `${fake.url}/hold/${gate}`, model: "echo" }));
      let refused: Code | undefined;
      const done = client.exec({ session: uid, inputs: ["full"], config }).catch((e: unknown) => {
        refused = ConnectError.from(e).code;
      });
      return { gate, done, refused: () => refused };
    }),
  );
  let ok = true;
  try {
    await until("every turn to start or be refused", () => turns.every((t) => fake.gateRequests(t.gate) > 0 || t.refused() !== undefined));
    ok = turns.every((t) => t.refused() === undefined);
  } catch {
    ok = false;
  }
  for (const g of gates) fake.openGate(g);
  await Promise.all(turns.map((t) => t.done));
  return ok;
}

await main();
