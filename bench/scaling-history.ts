/**
 * The history phase of `npm run bench:scaling`: what one turn costs on a session that already
 * holds 0, 5k, 10k and 20k records, against the same turn on a fresh session, for each kind of
 * turn that could read the history: an echo turn, a chat turn on the host's built-in `echo` model
 * (it answers inside the host, so no provider is called), an inputless Exec (a turn that only
 * looks for something to recover), and a Cancel with nothing running (it reads the latest
 * execution, as Approve and Resume do); and the operations that should not read it either: a
 * GetSession, a Suspend followed by a Resume, a Fork of one child at the end of the session's
 * first turn (five records to copy, whatever follows them), and a Replay of the last turn's five
 * records. Per checkpoint and kind it prints both medians and their ratio, and one
 * `bench scaling-<kind>-<records> ratio=… target=<=1.2` line. It asserts nothing.
 *
 * Each kind grows one long session through the checkpoints with Execs of up to 1000 inputs
 * (bench/lib.ts buildSession). At a checkpoint, rounds alternate a timed turn on the long session
 * with the same turn on a fresh session of the same kind that ran one turn first, so both objects
 * are warm and only the history differs (a session's very first turn also pays for starting its
 * object and creating its tables, which would flatter the ratio). Sizes:
 * BENCH_SCALING_RECORDS (default 0,5000,10000,20000), BENCH_SCALING_ROUNDS (default 30),
 * BENCH_SCALING_KINDS (the kinds to run, by name, separated by commas; default all).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { SessionsClient } from "../sdk/client.js";
import { buildSession, fmt, interleaved, median, retryProxy503, summary } from "./lib.js";

interface Kind {
  name: string;
  /** A new session of this kind (not timed). */
  open(client: SessionsClient, label: string): Promise<string>;
  /** The timed turn. */
  turn(client: SessionsClient, uid: string): Promise<unknown>;
}

const uidOf = (s: { metadata?: { uid: string } }) => s.metadata!.uid;

/** A Cancel with nothing running, which the session must refuse with FAILED_PRECONDITION (shared with scaling-wake.ts). */
export async function idleCancel(c: SessionsClient, uid: string): Promise<void> {
  const refused = await c.cancel(uid).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(refused instanceof ConnectError) || refused.code !== Code.FailedPrecondition) throw new Error(`an idle Cancel must be refused, got ${String(refused)}`);
}

const KINDS: Kind[] = [
  {
    name: "echo",
    open: async (c, label) => uidOf(await c.create({ name: label, harness: "echo" })),
    turn: (c, uid) => c.exec({ session: uid, inputs: ["one more"] }),
  },
  {
    name: "chat",
    open: async (c, label) => uidOf(await c.create({ name: label, harness: "chat", model: "echo" })),
    turn: (c, uid) => c.exec({ session: uid, inputs: ["one more"] }),
  },
  {
    name: "inputless",
    open: async (c, label) => uidOf(await c.create({ name: label, harness: "echo" })),
    turn: (c, uid) => c.exec({ session: uid }),
  },
  {
    // Cancel with nothing running: the session looks at its latest execution and answers
    // FAILED_PRECONDITION (what Approve, Resume and Cancel all read first).
    name: "cancel",
    open: async (c, label) => uidOf(await c.create({ name: label, harness: "echo" })),
    turn: idleCancel,
  },
  {
    name: "get",
    open: async (c, label) => uidOf(await c.create({ name: label, harness: "echo" })),
    turn: (c, uid) => c.get(uid),
  },
  {
    // Each round journals a SUSPEND and a RESUME: the session grows by two records a round.
    name: "suspend-resume",
    open: async (c, label) => uidOf(await c.create({ name: label, harness: "echo" })),
    turn: async (c, uid) => {
      await c.suspend(uid);
      await c.resume(uid);
    },
  },
  {
    // The children copy records 1..5 (the first turn: start, input, model call, output, end).
    name: "fork-early",
    open: async (c, label) => uidOf(await c.create({ name: label, harness: "echo" })),
    turn: async (c, uid) => {
      const children = await c.fork(uid, { at: 5n });
      if (children.length !== 1 || children[0]!.lastSeq !== 6n)
        throw new Error(`a fork at seq 5 must make one child of 6 records, got ${children.map((s) => s.lastSeq).join(", ")}`);
    },
  },
  {
    name: "replay-last",
    open: async (c, label) => uidOf(await c.create({ name: label, harness: "echo" })),
    turn: async (c, uid) => {
      const head = (await c.get(uid)).lastSeq;
      let n = 0;
      for await (const _ of c.replay(uid, { from: head - 4n, to: head })) n++;
      if (n !== 5) throw new Error(`a Replay of the last five records returned ${n}`);
    },
  },
];

/** The kinds BENCH_SCALING_KINDS names (all by default); an unknown name is refused with the known ones. */
function chosenKinds(): Kind[] {
  const v = process.env.BENCH_SCALING_KINDS;
  if (!v) return KINDS;
  const names = v.split(",").map((s) => s.trim());
  const unknown = names.filter((n) => !KINDS.some((k) => k.name === n));
  if (unknown.length > 0) throw new Error(`BENCH_SCALING_KINDS: no kind ${unknown.join(", ")}; the kinds are ${KINDS.map((k) => k.name).join(", ")}`);
  return KINDS.filter((k) => names.includes(k.name));
}

export async function historyPhase(client: SessionsClient, checkpoints: readonly number[], rounds: number): Promise<void> {
  const kinds = chosenKinds();
  const longs = new Map<string, string>();
  for (const k of kinds) longs.set(k.name, await k.open(client, `bench-scaling-${k.name}-long`));
  for (const records of checkpoints) {
    for (const k of kinds) {
      const long = longs.get(k.name)!;
      if (records > 0) await buildSession(client, long, records);
      else await retryProxy503(() => client.exec({ session: long, inputs: ["first"] }));
      const fresh = await k.open(client, `bench-scaling-${k.name}-fresh`);
      await retryProxy503(() => client.exec({ session: fresh, inputs: ["first"] }));
      // One untimed pair first, so neither side pays for code the other warmed.
      await retryProxy503(() => k.turn(client, long));
      await retryProxy503(() => k.turn(client, fresh));
      const t = await interleaved(rounds, {
        long: () => retryProxy503(() => k.turn(client, long)),
        fresh: () => retryProxy503(() => k.turn(client, fresh)),
      });
      const longMs = median(t.long!);
      const freshMs = median(t.fresh!);
      const head = (await client.get(long)).lastSeq;
      console.log(
        `${k.name} @${records} records (head ${head}): ${fmt(longMs, 2)} ms a turn, fresh session ${fmt(freshMs, 2)} ms (median of ${rounds} interleaved rounds)`,
      );
      summary(`scaling-${k.name}-${records}`, longMs / freshMs, "<=1.2", `long_ms=${fmt(longMs, 2)} fresh_ms=${fmt(freshMs, 2)}`);
    }
  }
}
