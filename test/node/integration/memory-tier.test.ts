/**
 * The memory tier end to end, through the public API: a real `wrangler dev` host, the substrate
 * bridge, and the TEST-ONLY stand-in ateapi behind it (scripts/substrate-stack.ts; its actors are
 * processes whose "memory" is the counter's test-only image, since this machine cannot checkpoint
 * a process). The counter (examples/harnesses/counter.ts) requires memory snapshots: Suspend
 * checkpoints its actor, Resume restores it and it continues at N+1; Fork checkpoints the parent
 * once and clones every child from that one snapshot; a historical at_seq is refused with nothing
 * touched; and faults injected in the stand-in (a failing step of the fan-out, no free worker,
 * a held lease on resume, the parent woken between the checkpoint and a tag) leave the parent's
 * chain verifying, no child listed or stored, and no tag or clone on the backend; an unreachable
 * control plane is UNAVAILABLE naming its address.
 */
import { resolve } from "node:path";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Lifecycle_Kind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { ActorState } from "../../../proto/gen/ateapi/control_pb.js";
import { EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { createHttpRuntime } from "../../../runtimes/http/index.js";
import { loadHostedHarness, startSubstrateServer } from "../../../runtimes/substrate/index.js";
import { freePort, ROOT } from "../../../scripts/dev-server.js";
import { startSubstrateBackends, type SubstrateBackends } from "../../../scripts/substrate-stack.js";
import type { FaultMethod } from "../../fixtures/ateapi/faults.js";
import { until } from "../pod/support.js";
import { startHost, type Host } from "../support/host.js";
import { rejection } from "../support/rejection.js";

const TOKEN = "rt_memory_tier_0123456789abcdef";
const FORK_LIMIT = 3;
let host: Host;
let stack: SubstrateBackends;
let projects = 0;

beforeAll(async () => {
  host = await startHost({ vars: { RUNTIME_TOKEN: TOKEN, MAX_FORK_COUNT: String(FORK_LIMIT) } });
  stack = await startSubstrateBackends({
    hostUrl: host.url,
    token: TOKEN,
    harnesses: {
      counter: { module: "examples/harnesses/counter.ts", resumability: Resumability.REQUIRES_MEMORY_SNAPSHOT },
      "sub-echo": { module: "examples/harnesses/echo.ts", resumability: Resumability.STATELESS_REPLAY },
    },
  });
});
afterEach(() => stack?.standin.faults.clear());
afterAll(async () => {
  await stack?.close();
  await host?.stop();
});

/** A counter session in a project of its own, with `n` turns behind it (its count is n). */
async function counterAt(n: number): Promise<{ uid: string; project: string }> {
  const project = `mem-${++projects}`;
  const s = await host.client.create({ harness: "counter", project });
  const uid = s.metadata!.uid;
  for (let i = 1; i <= n; i++) expect(await say(uid)).toEqual([String(i)]);
  return { uid, project };
}

async function say(uid: string): Promise<string[]> {
  return (await host.client.exec({ session: uid, inputs: ["next"] })).outputs;
}

async function listed(project: string): Promise<string[]> {
  const out: string[] = [];
  for await (const s of host.client.list({ project })) out.push(s.metadata!.uid);
  return out;
}

/** The ateapi calls (of these methods) that named `subject`, in order. */
function callsOn(subject: string, methods: FaultMethod[] = ["CreateActor", "ResumeActor", "SuspendActor", "DeleteActor"]): string[] {
  return stack.standin.calls.filter((c) => c.subject === subject && methods.includes(c.method as FaultMethod)).map((c) => c.method);
}

/** Children a fan-out tried to make since call `from`: the uids of the tags it asked for. */
function attemptedChildren(from: number): string[] {
  return [...new Set(stack.standin.calls.slice(from).flatMap((c) => (c.method === "CreateTag" && c.subject.startsWith("fork-") ? [c.subject.slice(5)] : [])))];
}

/** After a failed fan-out: no child listed or stored, no clone, tag or stray process, the parent's chain verifying with its checkpoint last. */
async function expectNoChildren(parent: { uid: string; project: string }, children: string[]): Promise<void> {
  expect(await listed(parent.project)).toEqual([parent.uid]);
  for (const c of children) {
    expect((await rejection(host.client.get(c))).code, `child ${c} is stored`).toBe(Code.NotFound);
    expect(stack.standin.actor(c), `clone ${c}`).toBeUndefined();
    expect(stack.standin.tag(`fork-${c}`), `tag fork-${c}`).toBeUndefined();
  }
  await until(() => stack.standin.orphans().length === 0, "no actor process without its actor");
  expect(await host.client.verify(parent.uid)).toMatchObject({ chainOk: true });
  const last = (await host.records(parent.uid)).at(-1)!.event!.body;
  expect(last.case === "lifecycle" && last.value.kind).toBe(Lifecycle_Kind.LIFECYCLE_SUSPEND);
}

describe("memory tier: suspend and resume", () => {
  it("substrate: Suspend keeps a cold actor with its snapshot, Resume restores it and the counter continues at N+1; records START…END, SUSPEND, RESUME, START…END; ateapi create, resume, suspend, resume, no delete (checklist §8.16 #154, checklist §8.18 #194)", async () => {
    const p = await counterAt(2);
    const suspended = await host.client.suspend(p.uid);
    expect(suspended.computeState).toBe(ComputeState.COMPUTE_COLD);
    const actor = stack.standin.actor(p.uid)!;
    expect(actor.state).toBe(ActorState.SUSPENDED);
    expect(actor.worker?.alive ?? false).toBe(false);
    const checkpoint = (await host.records(p.uid)).at(-1)!.event!.body;
    expect(checkpoint.case === "lifecycle" && checkpoint.value).toMatchObject({
      kind: Lifecycle_Kind.LIFECYCLE_SUSPEND,
      snapshotLocal: p.uid,
      snapshotExternalUri: actor.snapshot.uri,
      snapshotMemory: true,
    });

    const resumed = await host.client.resume(p.uid);
    expect(resumed.computeState).toBe(ComputeState.COMPUTE_LIVE);
    expect(stack.standin.actor(p.uid)?.state).toBe(ActorState.RUNNING);
    expect(await say(p.uid)).toEqual(["3"]);
    const turn = ["EXECUTION_START", "INPUT", "OUTPUT", "END"];
    expect(await host.kinds(p.uid)).toEqual([...turn, ...turn, "LIFECYCLE", "LIFECYCLE", ...turn]);
    expect(callsOn(p.uid)).toEqual(["CreateActor", "ResumeActor", "SuspendActor", "ResumeActor"]);
    expect(await host.client.verify(p.uid)).toMatchObject({ chainOk: true });
  });

  it("resume: an actor gone with its memory is FAILED_PRECONDITION naming the snapshot; nothing is written and no fresh actor is made", async () => {
    const p = await counterAt(1);
    await host.client.suspend(p.uid);
    const uri = stack.standin.actor(p.uid)!.snapshot.uri;
    // Someone removed the actor behind the host's back (the bridge's Stop, called directly).
    await createHttpRuntime({ baseUrl: stack.bridges.counter!.url, token: TOKEN }).stop({
      id: p.uid,
      worker: "",
      address: "",
      runtime: "substrate",
      fence: 0n,
    });
    const before = (await host.client.get(p.uid)).lastSeq;
    const e = await rejection(host.client.resume(p.uid));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain(uri);
    expect(e.rawMessage).toContain("is gone");
    expect(await host.client.get(p.uid)).toMatchObject({ lastSeq: before, computeState: ComputeState.COMPUTE_COLD });
    expect(stack.standin.actor(p.uid)).toBeUndefined();
  });

  it("resume with ABORTED on ResumeActor: a held lease is UNAVAILABLE with nothing written; once it is free the same Resume restores the counter", async () => {
    const p = await counterAt(2);
    await host.client.suspend(p.uid);
    const before = (await host.client.get(p.uid)).lastSeq;
    stack.standin.faults.fail({ method: "ResumeActor", code: Code.Aborted, match: (s) => s === p.uid, times: Number.POSITIVE_INFINITY });
    const e = await rejection(host.client.resume(p.uid));
    expect(e.code).toBe(Code.Unavailable);
    expect(await host.client.get(p.uid)).toMatchObject({ lastSeq: before, computeState: ComputeState.COMPUTE_COLD });
    expect(stack.standin.actor(p.uid)?.state).toBe(ActorState.SUSPENDED);
    stack.standin.faults.clear();
    await host.client.resume(p.uid);
    expect(await say(p.uid)).toEqual(["3"]);
    expect(await host.client.verify(p.uid)).toMatchObject({ chainOk: true });
  });
});

describe("memory tier: fork", () => {
  it("fork: checkpoints the parent once and clones each child from its own tag; every child holds the prefix plus FORK, verifies and answers N+1; so does the resumed parent; a child's Delete releases its tag (checklist §8.16 #142, #145, checklist §8.18 #194)", async () => {
    const p = await counterAt(3);
    const head = (await host.client.get(p.uid)).lastSeq;
    const from = stack.standin.calls.length;
    const children = await host.client.fork(p.uid, { count: FORK_LIMIT });
    expect(children).toHaveLength(FORK_LIMIT);
    const uids = children.map((c) => c.metadata!.uid);
    for (const c of children) expect(c).toMatchObject({ parentUid: p.uid, forkSeq: head, computeState: ComputeState.COMPUTE_LIVE });

    // One checkpoint for the whole fan-out; one tag and one clone per child.
    const since = stack.standin.calls.slice(from);
    expect(since.filter((c) => c.method === "SuspendActor").map((c) => c.subject)).toEqual([p.uid]);
    expect(
      since
        .filter((c) => c.method === "CreateTag")
        .map((c) => c.subject)
        .sort(),
    ).toEqual(uids.map((u) => `fork-${u}`).sort());
    expect(
      since
        .filter((c) => c.method === "CreateActor")
        .map((c) => c.subject)
        .sort(),
    ).toEqual([...uids].sort());
    expect(callsOn(p.uid, ["DeleteActor"])).toEqual([]);

    const parent = await host.records(p.uid);
    const last = parent.at(-1)!;
    expect(last.seq).toBe(head + 1n);
    expect(last.event!.body.case === "lifecycle" && last.event!.body.value).toMatchObject({
      kind: Lifecycle_Kind.LIFECYCLE_SUSPEND,
      snapshotExternalUri: stack.standin.actor(p.uid)!.snapshot.uri,
      snapshotMemory: true,
    });
    for (const uid of uids) {
      const records = await host.records(uid);
      // Exactly the prefix (the parent's checkpoint is not copied), then FORK linked to it.
      expect(records.slice(0, -1).map((r) => r.contentHash)).toEqual(parent.slice(0, Number(head)).map((r) => r.contentHash));
      const fork = records.at(-1)!;
      expect(fork.seq).toBe(head + 1n);
      expect(fork.event!.body.case === "lifecycle" && fork.event!.body.value).toMatchObject({ kind: Lifecycle_Kind.LIFECYCLE_FORK, detail: `parent@${head}` });
      expect(stack.standin.tag(`fork-${uid}`)?.snapshotUri).toBeTruthy();
      expect(await host.client.verify(uid)).toMatchObject({ chainOk: true });
    }
    expect((await listed(p.project)).sort()).toEqual([p.uid, ...uids].sort());

    for (const uid of uids) expect(await say(uid)).toEqual(["4"]);
    await host.client.resume(p.uid);
    expect(await say(p.uid)).toEqual(["4"]);
    for (const uid of [p.uid, ...uids]) expect(await host.client.verify(uid)).toMatchObject({ chainOk: true });

    // A child's Delete stops its clone and releases its tag (the retention pin on the parent's copy).
    await host.client.delete(uids[0]!);
    expect(stack.standin.actor(uids[0]!)).toBeUndefined();
    expect(stack.standin.tag(`fork-${uids[0]}`)).toBeUndefined();
    expect(stack.standin.actor(uids[1]!)?.state).toBe(ActorState.RUNNING);
    expect(await say(uids[1]!)).toEqual(["5"]);
  });

  it("fork: at a historical seq it is FAILED_PRECONDITION saying why, with no fence minted, no ateapi call and no child; the parent stays usable (checklist §8.16 #143, checklist §8.17 #171)", async () => {
    const p = await counterAt(2);
    const from = stack.standin.calls.length;
    const e = await rejection(host.client.fork(p.uid, { at: 4n, count: 2 }));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("forks only at its head (seq 8)");
    expect(stack.standin.calls.length).toBe(from);
    expect(await listed(p.project)).toEqual([p.uid]);
    const fenceBefore = (await host.records(p.uid)).at(-1)!.fence;
    expect(await say(p.uid)).toEqual(["3"]);
    // The next placement mints the next fence: the refused fork minted none.
    expect((await host.records(p.uid)).at(-1)!.fence).toBe(fenceBefore + 1n);
  });

  it("fork: the fan-out is bounded by the fork limit: one child more is INVALID_ARGUMENT before anything happens", async () => {
    const p = await counterAt(1);
    const from = stack.standin.calls.length;
    const e = await rejection(host.client.fork(p.uid, { count: FORK_LIMIT + 1 }));
    expect(e.code).toBe(Code.InvalidArgument);
    expect(stack.standin.calls.length).toBe(from);
    expect((await host.client.get(p.uid)).lastSeq).toBe(4n);
  });

  it("fork with step 2 of the clones failing: nothing of the fan-out is left, and the parent keeps its checkpoint (checklist §8.16 #148)", async () => {
    const p = await counterAt(2);
    const from = stack.standin.calls.length;
    stack.standin.faults.fail({ method: "CreateActor", code: Code.Internal, match: (s) => s !== p.uid, nth: 2 });
    const e = await rejection(host.client.fork(p.uid, { count: 3 }));
    // ateapi's INTERNAL is the bridge's INTERNAL, which the host's client counts as retryable.
    expect(e.code).toBe(Code.Unavailable);
    const tried = attemptedChildren(from);
    expect(tried).toHaveLength(3);
    await expectNoChildren(p, tried);
  });

  it("fork with RESOURCE_EXHAUSTED on a clone's CreateActor: UNAVAILABLE, retryable; nothing is left; a retry at the new head forks", async () => {
    const p = await counterAt(2);
    const from = stack.standin.calls.length;
    stack.standin.faults.fail({ method: "CreateActor", code: Code.ResourceExhausted, match: (s) => s !== p.uid, message: "no free workers available" });
    const e = await rejection(host.client.fork(p.uid, { count: 2 }));
    expect(e.code).toBe(Code.Unavailable);
    expect(e.rawMessage).toContain("fork it again at its new head");
    await expectNoChildren(p, attemptedChildren(from));

    const children = await host.client.fork(p.uid, { count: 2 });
    for (const c of children) expect(await say(c.metadata!.uid)).toEqual(["3"]);
  });

  it("fork with ABORTED on every clone's ResumeActor: the bridge's retries run out, nothing is left", async () => {
    const p = await counterAt(1);
    const from = stack.standin.calls.length;
    stack.standin.faults.fail({ method: "ResumeActor", code: Code.Aborted, match: (s) => s !== p.uid, times: Number.POSITIVE_INFINITY });
    const e = await rejection(host.client.fork(p.uid, { count: 2 }));
    expect(e.code).toBe(Code.Unavailable);
    await expectNoChildren(p, attemptedChildren(from));
  });

  it("fork with the parent woken and suspended again before its tag: FAILED_PRECONDITION naming the superseded snapshot; nothing is left; a fork at the new head then clones the parent", async () => {
    const p = await counterAt(2);
    const recorded = stack.standin.actor(p.uid)!;
    const from = stack.standin.calls.length;
    stack.standin.faults.wakeBeforeTag(p.uid);
    const e = await rejection(host.client.fork(p.uid, { count: 2 }));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("superseded");
    const checkpoint = (await host.records(p.uid)).at(-1)!.event!.body;
    const uri = checkpoint.case === "lifecycle" ? checkpoint.value.snapshotExternalUri : "";
    expect(e.rawMessage).toContain(uri);
    expect(recorded.snapshot.uri).not.toBe(uri);
    await expectNoChildren(p, attemptedChildren(from));

    const [child] = await host.client.fork(p.uid, { count: 1 });
    expect(await say(child!.metadata!.uid)).toEqual(["3"]);
  });
});

describe("memory tier: a stateless harness on the bridge", () => {
  it("substrate: echo on an actor replays byte-identically with zero model calls and a verifying chain; a historical-seq fork of the counter is refused and leaves it usable (checklist §8.18 #196)", async () => {
    const s = await host.client.create({ harness: "sub-echo", project: `mem-${++projects}` });
    const uid = s.metadata!.uid;
    expect((await host.client.exec({ session: uid, inputs: ["one"] })).outputs).toEqual(["echo:one"]);
    expect((await host.client.exec({ session: uid, inputs: ["two"] })).outputs).toEqual(["echo:two"]);
    const before = (await host.records(uid)).map((r) => r.contentHash);
    const v = await host.client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n, outputs: ["echo:one", "echo:two"] });
    expect((await host.records(uid)).map((r) => r.contentHash)).toEqual(before);

    const p = await counterAt(2);
    expect((await rejection(host.client.fork(p.uid, { at: 2n }))).code).toBe(Code.FailedPrecondition);
    expect(await say(p.uid)).toEqual(["3"]);
  });
});

describe("memory tier: an unreachable control plane", () => {
  it("exec: a bridge whose ateapi is unreachable is UNAVAILABLE naming ateapi's address; nothing is journaled", async () => {
    const port = await freePort();
    const lost = await startSubstrateServer({
      ateapiUrl: `http://127.0.0.1:${port}`,
      atespace: "agentsessions",
      template: "counter",
      harness: await loadHostedHarness(`counter-lost=${resolve(ROOT, "examples/harnesses/counter.ts")}`),
      routerUrl: stack.standin.routerUrl,
      token: TOKEN,
      log: () => undefined,
    });
    try {
      const registry = createClient(EdgeRegistry, createConnectTransport({ baseUrl: host.url }));
      await registry.registerHarness({
        name: "counter-lost",
        spec: { capabilities: { resumability: Resumability.REQUIRES_MEMORY_SNAPSHOT } },
        placement: { placement: { case: "httpRuntime", value: { url: lost.url } } },
      });
      const uid = (await host.client.create({ harness: "counter-lost" })).metadata!.uid;
      const e = await rejection(host.client.exec({ session: uid, inputs: ["next"] }));
      expect(e.code).toBe(Code.Unavailable);
      expect(e.rawMessage).toContain(`ateapi http://127.0.0.1:${port}`);
      expect(e.rawMessage).toContain("unreachable");
      expect((await host.client.get(uid)).lastSeq).toBe(0n);
    } finally {
      await lost.close();
    }
  });
});
