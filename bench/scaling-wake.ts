/**
 * The wake phase of `npm run bench:scaling`: what the first operation costs after a session's
 * object starts (a restart of the server stands in for the platform evicting an idle object), on
 * a long session against the same operation on a small one. Every other bench times objects that
 * are already warm; this one times what a user waits for on their first turn after a pause.
 *
 * Kinds: an echo turn, and a Cancel with nothing running (it reads the latest execution, as
 * Approve and Resume do). Each kind has its own long session (BENCH_SCALING_WAKE_RECORDS, default
 * 60,000 records: past the default memory budget) and its own small one (one turn), so every timed
 * operation meets a cold object. Each round restarts the server, warms the Worker on a third
 * session, then times each kind's long and small session once, in an order that alternates by
 * round. Medians of BENCH_SCALING_WAKE_ROUNDS (default 5) rounds; one
 * `bench scaling-wake-<kind> ratio=… target=<=1.2` line per kind. It asserts nothing.
 */
import type { DevServer } from "../scripts/dev-server.js";
import type { SessionsClient } from "../sdk/client.js";
import { buildSession, fmt, median, retryProxy503, summary, timed } from "./lib.js";
import { idleCancel } from "./scaling-history.js";

interface WakeKind {
  name: string;
  op(client: SessionsClient, uid: string): Promise<unknown>;
}

const KINDS: WakeKind[] = [
  { name: "echo", op: (c, uid) => c.exec({ session: uid, inputs: ["after a pause"] }) },
  { name: "cancel", op: idleCancel },
];

export async function wakePhase(server: DevServer, client: SessionsClient, records: number, rounds: number): Promise<void> {
  const open = async (label: string) => (await client.create({ name: label, harness: "echo" })).metadata!.uid;
  const sessions = new Map<string, { long: string; small: string }>();
  for (const k of KINDS) {
    const long = await open(`bench-wake-${k.name}-long`);
    await buildSession(client, long, records);
    // Its latest execution a one-input turn, as the small session's is: only the history differs.
    await retryProxy503(() => client.exec({ session: long, inputs: ["last"] }));
    const small = await open(`bench-wake-${k.name}-small`);
    await retryProxy503(() => client.exec({ session: small, inputs: ["first"] }));
    sessions.set(k.name, { long, small });
  }
  const warm = await open("bench-wake-warm");
  const times = new Map<string, { long: number[]; small: number[] }>(KINDS.map((k) => [k.name, { long: [], small: [] }]));
  for (let round = 0; round < rounds; round++) {
    await server.restart();
    await retryProxy503(() => client.exec({ session: warm, inputs: ["warm"] }));
    for (const k of KINDS) {
      const s = sessions.get(k.name)!;
      const t = times.get(k.name)!;
      const order = round % 2 === 0 ? (["long", "small"] as const) : (["small", "long"] as const);
      for (const which of order) t[which].push(await timed(() => retryProxy503(() => k.op(client, s[which]))));
    }
  }
  for (const k of KINDS) {
    const t = times.get(k.name)!;
    const longMs = median(t.long);
    const smallMs = median(t.small);
    console.log(
      `wake ${k.name} @${records} records: first operation after the object starts ${fmt(longMs, 2)} ms, on a one-turn session ${fmt(smallMs, 2)} ms (median of ${rounds} restarts; after the first restart ${fmt(t.long[0]!, 2)} ms)`,
    );
    summary(`scaling-wake-${k.name}`, longMs / smallMs, "<=1.2", `long_ms=${fmt(longMs, 2)} small_ms=${fmt(smallMs, 2)}`);
  }
}
