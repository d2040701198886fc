/**
 * `npm run demo:substrate`: the memory tier on one machine, end to end. Starts a host (a real
 * `wrangler dev`), the TEST-ONLY stand-in ateapi and the substrate bridge on free loopback ports
 * (scripts/substrate-stack.ts), registers the counter (examples/harnesses/counter.ts: its state
 * is an integer in memory, never rebuilt from the journal) on the bridge, and drives it through
 * the public API: exec, exec, suspend, resume, exec, fork --count 3, exec on each child. It then
 * verifies every chain (the parent's at its head before the fork and after its fork checkpoint,
 * and each child's), stops everything and removes what it made. One line per step; the last is
 *
 *   demo:substrate ok counter=1,2,3 children=4,4,4 verified=5
 *
 * Any mismatch prints `demo:substrate FAILED …` and exits 1. The stand-in's actors are processes
 * whose "memory snapshot" is the counter's test-only image: this machine cannot checkpoint a
 * process (docs/runtimes.md "What this repository tests"). What runs for real is the host, the
 * bridge, gRPC to the control plane, the tunnel and the journals. Tested by
 * test/node/integration/demo-substrate.test.ts.
 */
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { Lifecycle_Kind, type LogRecord } from "../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState } from "../proto/gen/agentsessions/v1/session_pb.js";
import { SessionsClient } from "../sdk/client.js";
import { startDevServer, type DevServer } from "./dev-server.js";
import { startSubstrateBackends, type SubstrateBackends } from "./substrate-stack.js";

const FORK_COUNT = 3;

export interface DemoResult {
  /** What the parent's three turns answered. */
  counter: number[];
  /** What each child's first turn answered. */
  children: number[];
  /** Chains that verified. */
  verified: number;
}

/** A step's expectation failed: the demo stops there. */
export class DemoMismatch extends Error {
  constructor(step: string, detail: string) {
    super(`${step}: ${detail}`);
    this.name = "DemoMismatch";
  }
}

export async function runSubstrateDemo(print: (line: string) => void = (l) => console.log(l)): Promise<DemoResult> {
  const token = `rt_demo_${randomBytes(16).toString("hex")}`;
  let host: DevServer | undefined;
  let backends: SubstrateBackends | undefined;
  const say = (line: string) => print(`demo:substrate ${line}`);
  try {
    host = await startDevServer({ vars: { RUNTIME_TOKEN: token } });
    backends = await startSubstrateBackends({
      hostUrl: host.url,
      token,
      harnesses: { counter: { module: "examples/harnesses/counter.ts", resumability: Resumability.REQUIRES_MEMORY_SNAPSHOT } },
    });
    say(`host ${host.url} (wrangler dev), ateapi stand-in ${backends.standin.url}, bridge ${backends.bridges.counter!.url}`);
    const client = new SessionsClient({ server: host.url });
    const records = async (uid: string) => {
      const out: LogRecord[] = [];
      for await (const r of client.replay(uid)) out.push(r);
      return out;
    };
    const turn = async (step: string, uid: string, want: number): Promise<number> => {
      const outputs = (await client.exec({ session: uid, inputs: ["next"] })).outputs;
      if (outputs.length !== 1 || outputs[0] !== String(want)) throw new DemoMismatch(step, `expected output ${want}, got ${JSON.stringify(outputs)}`);
      say(`${step} → ${outputs[0]}`);
      return want;
    };
    let verified = 0;
    const verify = async (step: string, uid: string) => {
      const v = await client.verify(uid);
      if (!v.chainOk) throw new DemoMismatch(step, `chain of ${uid} does not verify: ${v.chainDetail}`);
      verified++;
      say(`${step} → chain ok, ${v.records} records`);
    };

    const parent = (await client.create({ harness: "counter", project: "demo-substrate" })).metadata!.uid;
    say(`create → session ${parent} on harness counter`);
    const counter = [await turn("exec", parent, 1), await turn("exec", parent, 2)];

    const suspended = await client.suspend(parent);
    const checkpoint = lifecycleOf((await records(parent)).at(-1));
    if (suspended.computeState !== ComputeState.COMPUTE_COLD || checkpoint?.kind !== Lifecycle_Kind.LIFECYCLE_SUSPEND || !checkpoint.snapshotMemory) {
      throw new DemoMismatch("suspend", "expected COLD compute and a SUSPEND carrying a memory snapshot");
    }
    say(`suspend → COLD, SUSPEND at seq ${suspended.lastSeq} with memory snapshot ${checkpoint.snapshotExternalUri}`);

    const resumed = await client.resume(parent);
    if (resumed.computeState !== ComputeState.COMPUTE_LIVE)
      throw new DemoMismatch("resume", `expected LIVE compute, got ${ComputeState[resumed.computeState]}`);
    say(`resume → LIVE, RESUME at seq ${resumed.lastSeq}`);
    counter.push(await turn("exec", parent, 3));
    await verify("verify parent", parent);

    const forked = await client.fork(parent, { count: FORK_COUNT });
    const uids = forked.map((c) => c.metadata!.uid);
    const forkCheckpoint = lifecycleOf((await records(parent)).at(-1));
    if (uids.length !== FORK_COUNT || forkCheckpoint?.kind !== Lifecycle_Kind.LIFECYCLE_SUSPEND) {
      throw new DemoMismatch("fork", `expected ${FORK_COUNT} children and the parent's fork checkpoint (SUSPEND) last on its chain`);
    }
    say(`fork --count ${FORK_COUNT} → ${uids.join(", ")} cloned from ${forkCheckpoint.snapshotExternalUri}`);

    const children: number[] = [];
    for (const [i, uid] of uids.entries()) children.push(await turn(`exec child ${i + 1}`, uid, 4));
    await verify("verify parent after the fork", parent);
    for (const [i, uid] of uids.entries()) await verify(`verify child ${i + 1}`, uid);

    say(`ok counter=${counter.join(",")} children=${children.join(",")} verified=${verified}`);
    return { counter, children, verified };
  } finally {
    await backends?.close();
    await host?.dispose();
  }
}

function lifecycleOf(r: LogRecord | undefined) {
  const b = r?.event?.body;
  return b?.case === "lifecycle" ? b.value : undefined;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runSubstrateDemo().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(`demo:substrate FAILED ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}
