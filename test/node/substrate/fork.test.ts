/**
 * ForkMany on the substrate bridge (runtimes/substrate/memory-fork.ts): N children cloned from the
 * parent's one snapshot, all or nothing. Faults injected in the stand-in ateapi at each step of
 * the fan-out (a tag, a clone, a resume, an attach) and the races it must catch (the parent woken
 * and suspended again between the check and the tag) must leave no child actor, no tag and no
 * process behind, the parent exactly as it was, and the same fan-out retryable.
 */
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SnapshotRefSchema, type SnapshotRef } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { ActorState } from "../../../proto/gen/ateapi/control_pb.js";
import { createHttpRuntime, isRetryableRuntimeError } from "../../../runtimes/http/index.js";
import type { ForkChild, Incarnation } from "../../../runtimes/runtime-spi.js";
import type { FaultRule } from "../../fixtures/ateapi/faults.js";
import { until } from "../pod/support.js";
import { startSubstrateFixture, uid, type SubstrateFixture } from "./support.js";
import { rejection } from "../support/rejection.js";

let f: SubstrateFixture;
beforeAll(async () => {
  f = await startSubstrateFixture();
});
afterEach(() => f.standin.faults.clear());
afterAll(async () => {
  await f?.close();
});

interface Parent {
  uid: string;
  inc: Incarnation;
  ref: SnapshotRef;
}

/** A parent whose count is `n`, checkpointed: its ref is what the host's SUSPEND records. */
async function parentAt(n: number): Promise<Parent> {
  const u = uid();
  const inc = await f.runtime.create(f.spec(u));
  for (let i = 1; i <= n; i++) expect(await f.tunnel.exec(u)).toEqual([String(i)]);
  return { uid: u, inc, ref: await f.runtime.snapshot(inc, "EXTERNAL") };
}

const children = (n: number): ForkChild[] =>
  Array.from({ length: n }, () => {
    const u = uid();
    return { sessionUid: u, dialback: f.tunnel.dialback("counter", u) };
  });

/** Fresh dialbacks for the same child uids (a one-time token is spent by a failed attempt). */
const again = (cs: ForkChild[]): ForkChild[] => cs.map((c) => ({ sessionUid: c.sessionUid, dialback: f.tunnel.dialback("counter", c.sessionUid) }));

const forkMany = (p: Parent, cs: ForkChild[], ref = p.ref) => f.runtime.forkMany(ref, cs, { sessionUid: p.uid, harness: "counter" });

/** Nothing of the fan-out is left, and the parent is as the checkpoint left it. */
async function expectNothingLeft(p: Parent, cs: ForkChild[]): Promise<void> {
  for (const c of cs) {
    expect(f.standin.actor(c.sessionUid), `actor ${c.sessionUid}`).toBeUndefined();
    expect(f.standin.tag(`fork-${c.sessionUid}`), `tag fork-${c.sessionUid}`).toBeUndefined();
  }
  const parent = f.standin.actor(p.uid)!;
  expect(parent.state).toBe(ActorState.SUSPENDED);
  expect(parent.snapshot.uri).toBe(p.ref.externalUri);
  // Every process the stand-in started belongs to an actor that still exists (none of the children).
  await until(() => f.standin.orphans().length === 0, "no actor process to run without its actor");
}

async function stopAll(p: Parent, incs: Incarnation[]): Promise<void> {
  for (const i of incs) await f.runtime.stop(i);
  await f.runtime.stop(p.inc);
}

describe("forkMany", () => {
  it("forkMany: three children cloned from one snapshot each continue at N+1, as does the parent", async () => {
    const p = await parentAt(2);
    const cs = children(3);
    const before = f.standin.calls.length;
    const incs = await forkMany(p, cs);
    expect(incs.map((i) => i.id)).toEqual(cs.map((c) => c.sessionUid));
    const calls = f.standin.calls.slice(before);
    // The parent is checked once before the tags and once after each; it is never suspended again.
    expect(calls.filter((c) => c.subject === p.uid).map((c) => c.method)).toEqual(["GetActor", "GetActor", "GetActor", "GetActor"]);
    for (const c of cs) {
      expect(calls.filter((x) => x.subject === `fork-${c.sessionUid}`).map((x) => x.method)).toEqual(["CreateTag"]);
      expect(calls.filter((x) => x.subject === c.sessionUid).map((x) => x.method)).toEqual(["GetActor", "CreateActor", "ResumeActor"]);
      expect(f.standin.actor(c.sessionUid)?.sourceTag?.name).toBe(`fork-${c.sessionUid}`);
      expect(f.tunnel.live(c.sessionUid)?.authorization).toBe(`Bearer ${c.dialback!.token}`);
    }
    for (const c of cs) expect(await f.tunnel.exec(c.sessionUid)).toEqual(["3"]);
    expect(await f.tunnel.exec(cs[0]!.sessionUid)).toEqual(["4"]);
    expect(await f.tunnel.exec(cs[1]!.sessionUid)).toEqual(["4"]);
    expect(f.standin.actor(p.uid)?.snapshot.uri).toBe(p.ref.externalUri);
    await f.runtime.restore(p.ref, f.spec(p.uid));
    expect(await f.tunnel.exec(p.uid)).toEqual(["3"]);
    await stopAll(p, incs);
  });

  it("stop: a child's Stop deletes its actor and its tag; its siblings keep theirs", async () => {
    const p = await parentAt(1);
    const cs = children(2);
    const incs = await forkMany(p, cs);
    await f.runtime.stop(incs[0]!);
    expect(f.standin.actor(cs[0]!.sessionUid)).toBeUndefined();
    expect(f.standin.tag(`fork-${cs[0]!.sessionUid}`)).toBeUndefined();
    expect(f.standin.tag(`fork-${cs[1]!.sessionUid}`)).toBeDefined();
    expect(await f.tunnel.exec(cs[1]!.sessionUid)).toEqual(["2"]);
    await stopAll(p, incs.slice(1));
  });
});

describe("forkMany: a failed step tears down the whole fan-out", () => {
  const steps: [string, (cs: ForkChild[]) => FaultRule, Code][] = [
    ["the second tag", () => ({ method: "CreateTag", nth: 2, code: Code.Internal }), Code.Unavailable],
    [
      "the second clone",
      () => ({ method: "CreateActor", match: (_s, r) => !!(r as { actor?: { sourceTag?: unknown } }).actor?.sourceTag, nth: 2, code: Code.Internal }),
      Code.Unavailable,
    ],
    [
      "the second child's resume",
      (cs) => ({ method: "ResumeActor", match: (s) => s === cs[1]!.sessionUid, code: Code.FailedPrecondition }),
      Code.FailedPrecondition,
    ],
    ["the third child's attach", (cs) => ({ method: "Attach", match: (s) => s === cs[2]!.sessionUid, code: Code.Unavailable }), Code.Unavailable],
  ];
  for (const [step, rule, code] of steps) {
    it(`forkMany: a failure at ${step} leaves no child, no tag and no process; the parent is untouched; a retry succeeds`, async () => {
      const p = await parentAt(1);
      const cs = children(3);
      f.standin.faults.fail(rule(cs));
      const e = await rejection(forkMany(p, cs));
      expect(e.code).toBe(code);
      expect(e.rawMessage).toContain("runtime");
      await expectNothingLeft(p, cs);
      expect(f.logs.some((l) => l.includes('"msg":"fork"') && l.includes(p.uid) && !l.includes('"left"'))).toBe(true);

      const retried = again(cs);
      const incs = await forkMany(p, retried);
      for (const c of retried) expect(await f.tunnel.exec(c.sessionUid)).toEqual(["2"]);
      await stopAll(p, incs);
    });
  }

  it("forkMany: ABORTED on a child's resume is retried; if it persists the fan-out fails retryable and is torn down", async () => {
    const p = await parentAt(1);
    const once = children(2);
    f.standin.faults.fail({ method: "ResumeActor", match: (s) => s === once[1]!.sessionUid, code: Code.Aborted });
    const incs = await forkMany(p, once);
    expect(f.standin.calls.filter((c) => c.method === "ResumeActor" && c.subject === once[1]!.sessionUid)).toHaveLength(2);
    for (const i of incs) await f.runtime.stop(i);

    const always = children(2);
    f.standin.faults.fail({
      method: "ResumeActor",
      match: (s) => s === always[0]!.sessionUid,
      code: Code.Aborted,
      times: Infinity,
      message: "another operation holds the actor's lease",
    });
    const e = await rejection(forkMany(p, always));
    expect(isRetryableRuntimeError(e)).toBe(true);
    expect(e.rawMessage).toContain(`ResumeActor agentsessions/${always[0]!.sessionUid}: another operation holds the actor's lease (retryable)`);
    expect(f.standin.calls.filter((c) => c.method === "ResumeActor" && c.subject === always[0]!.sessionUid)).toHaveLength(3);
    await expectNothingLeft(p, always);
    await f.runtime.stop(p.inc);
  });
});

describe("forkMany: a caller that gives up", () => {
  it("forkMany: the host's timeout during an attach tears the fan-out down (nothing left, the parent untouched)", async () => {
    const p = await parentAt(1);
    const cs = children(2);
    const release = f.standin.faults.holdAttach(cs[1]!.sessionUid);
    try {
      const impatient = createHttpRuntime({ baseUrl: f.bridge.url, forkManyTimeoutMs: 3_000 });
      const e = await rejection(impatient.forkMany(p.ref, cs, { sessionUid: p.uid, harness: "counter" }));
      expect(isRetryableRuntimeError(e)).toBe(true);
      // The bridge logs the fan-out's outcome once its teardown is over.
      const ended = () => f.logs.find((l) => l.includes('"msg":"fork"') && l.includes(p.uid));
      await until(() => ended() !== undefined, "the fan-out's teardown", 30_000);
      expect(ended()).toContain('"outcome":"Canceled"');
      expect(ended()).not.toContain('"left"');
      await expectNothingLeft(p, cs);
    } finally {
      release();
    }
    await f.runtime.stop(p.inc);
  });
});

describe("forkMany: the parent's snapshot must still be the recorded one", () => {
  it("forkMany: the parent woken and suspended again between the check and the tag is FAILED_PRECONDITION naming both snapshots; nothing is left", async () => {
    const p = await parentAt(1);
    const cs = children(2);
    f.standin.faults.wakeBeforeTag(p.uid);
    const e = await rejection(forkMany(p, cs));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain(`snapshot ${p.ref.externalUri} was superseded by standin://`);
    expect(e.rawMessage).toContain("after tagging");
    for (const c of cs) {
      expect(f.standin.actor(c.sessionUid)).toBeUndefined();
      expect(f.standin.tag(`fork-${c.sessionUid}`)).toBeUndefined();
    }
    // The parent holds the later snapshot now (it really was woken): a new checkpoint forks fine.
    expect(f.standin.actor(p.uid)?.snapshot.uri).not.toBe(p.ref.externalUri);
    const fresh = { ...p, ref: await f.runtime.snapshot(p.inc, "EXTERNAL") };
    const incs = await forkMany(fresh, again(cs));
    expect(await f.tunnel.exec(cs[0]!.sessionUid)).toEqual(["2"]);
    await stopAll(p, incs);
  });

  it("forkMany: a parent running again since its checkpoint is FAILED_PRECONDITION (the snapshot is stale); nothing is made", async () => {
    const p = await parentAt(1);
    await f.runtime.create(f.spec(p.uid));
    const cs = children(1);
    const e = await rejection(forkMany(p, cs));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("is RUNNING before tagging");
    expect(e.rawMessage).toContain(p.ref.externalUri);
    expect(f.standin.tag(`fork-${cs[0]!.sessionUid}`)).toBeUndefined();
    await f.runtime.stop(p.inc);
  });

  it("forkMany: a ref superseded by a later checkpoint is FAILED_PRECONDITION naming it", async () => {
    const p = await parentAt(1);
    await f.runtime.restore(p.ref, f.spec(p.uid));
    const later = await f.runtime.snapshot(p.inc, "EXTERNAL");
    expect(later.externalUri).not.toBe(p.ref.externalUri);
    const e = await rejection(forkMany(p, children(1)));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain(`snapshot ${p.ref.externalUri} was superseded by ${later.externalUri} before tagging`);
    await f.runtime.stop(p.inc);
  });
});

describe("forkMany: refused requests make nothing", () => {
  it("forkMany: a child that already has an actor is ALREADY_EXISTS; it is left alone and no tag is made", async () => {
    const p = await parentAt(1);
    const taken = uid();
    const existing = await f.runtime.create(f.spec(taken));
    const cs = [...children(1), { sessionUid: taken, dialback: f.tunnel.dialback("counter", taken) }];
    const e = await rejection(forkMany(p, cs));
    expect(e.code).toBe(Code.AlreadyExists);
    expect(e.rawMessage).toContain(taken);
    expect(f.standin.actor(taken)?.state).toBe(ActorState.RUNNING);
    expect(f.standin.tag(`fork-${cs[0]!.sessionUid}`)).toBeUndefined();
    expect(f.standin.actor(cs[0]!.sessionUid)).toBeUndefined();
    await f.runtime.stop(existing);
    await f.runtime.stop(p.inc);
  });

  it("forkMany: no children, a repeated child or the parent as a child is INVALID_ARGUMENT; a ref without memory is FAILED_PRECONDITION", async () => {
    const p: Parent = { uid: uid(), inc: { id: "", worker: "", address: "", runtime: "substrate", fence: 0n }, ref: create(SnapshotRefSchema, {}) };
    p.ref = create(SnapshotRefSchema, { local: p.uid, externalUri: "standin://x", memory: true });
    const before = f.standin.calls.length;
    const [c] = children(1);
    expect((await rejection(forkMany(p, []))).code).toBe(Code.InvalidArgument);
    expect((await rejection(forkMany(p, [c!, c!]))).code).toBe(Code.InvalidArgument);
    expect((await rejection(forkMany(p, [{ sessionUid: p.uid, dialback: c!.dialback }]))).code).toBe(Code.InvalidArgument);
    const noMemory = await rejection(forkMany(p, [c!], create(SnapshotRefSchema, { local: p.uid, externalUri: "standin://x", memory: false })));
    expect(noMemory.code).toBe(Code.FailedPrecondition);
    expect(noMemory.rawMessage).toContain("no memory snapshot");
    expect(f.standin.calls.length).toBe(before);
  });
});
