/**
 * The substrate bridge (runtimes/substrate) through the host's HTTP runtime client, over real HTTP
 * to the bridge and real gRPC from the bridge to the stand-in ateapi (test/fixtures/ateapi): the
 * Runtime SPI's Create / Snapshot / Restore / Fork / Stop / Status on actors, observed on the
 * stand-in's actors and calls, on the actor processes, on the fake tunnel the harness dials back to,
 * and on the counter harness's count, which survives a snapshot only if its memory was restored.
 */
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, SnapshotRefSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { ActorState } from "../../../proto/gen/ateapi/control_pb.js";
import { isRetryableRuntimeError } from "../../../runtimes/http/index.js";
import type { Incarnation } from "../../../runtimes/runtime-spi.js";
import { isGone, until } from "../pod/support.js";
import { startSubstrateFixture, uid, type SubstrateFixture } from "./support.js";
import { rejection } from "../support/rejection.js";

let f: SubstrateFixture;
beforeAll(async () => {
  f = await startSubstrateFixture();
});
afterAll(async () => {
  await f?.close();
});

const inc = (id: string): Incarnation => ({ id, worker: "", address: "", runtime: "substrate", fence: 0n });
const callsFor = (u: string) => f.standin.calls.filter((c) => c.subject === u || c.subject === `fork-${u}`).map((c) => c.method);

describe("capabilities and describe", () => {
  it("capabilities: memory snapshots, no copy-on-write", async () => {
    const caps = await f.runtime.refreshCapabilities();
    expect({ memorySnapshot: caps.memorySnapshot, cowFork: caps.cowFork, attest: caps.attest, gpuState: caps.gpuState }).toEqual({
      memorySnapshot: true,
      cowFork: false,
      attest: false,
      gpuState: false,
    });
  });

  it("describe: answers the template's harness without creating an actor; another name is NOT_FOUND", async () => {
    const before = f.standin.calls.length;
    const d = await f.runtime.describe("counter");
    expect(d.id).toBe("counter");
    expect(d.capabilities?.resumability).toBe(Resumability.REQUIRES_MEMORY_SNAPSHOT);
    expect(f.standin.calls.length).toBe(before);
    expect((await rejection(f.runtime.describe("echo2"))).code).toBe(Code.NotFound);
  });
});

describe("create", () => {
  it("create: an absent actor is created from the template, resumed, and its harness dials back with the one-time token", async () => {
    const u = uid();
    const spec = f.spec(u);
    const placed = await f.runtime.create(spec);
    expect(placed).toMatchObject({ id: u, address: "", runtime: "substrate", fence: 0n });
    expect(placed.worker).toMatch(/^standin-worker-\d+$/);
    expect(callsFor(u)).toEqual(["GetActor", "CreateActor", "ResumeActor"]);
    expect(f.standin.actor(u)?.state).toBe(ActorState.RUNNING);
    const conn = f.tunnel.live(u)!;
    expect(conn.authorization).toBe(`Bearer ${spec.dialback!.token}`);
    expect(conn.hello?.name).toBe("counter");
    expect(f.standin.router.routed).toContain(`agentsessions/${u}`);
    expect(await f.runtime.status(placed)).toBe(ComputeState.COMPUTE_LIVE);
    expect(await f.tunnel.exec(u)).toEqual(["1"]);
    await f.runtime.stop(placed);
  });

  it("create: on a RUNNING actor only attaches; the live connection is kept and the count goes on", async () => {
    const u = uid();
    const placed = await f.runtime.create(f.spec(u));
    expect(await f.tunnel.exec(u)).toEqual(["1"]);
    const connections = f.tunnel.connections.length;
    const again = await f.runtime.create(f.spec(u));
    expect(again.worker).toBe(placed.worker);
    expect(callsFor(u)).toEqual(["GetActor", "CreateActor", "ResumeActor", "GetActor"]);
    expect(f.tunnel.connections.length).toBe(connections);
    expect(await f.tunnel.exec(u)).toEqual(["2"]);
    await f.runtime.stop(placed);
  });

  it("create: concurrent Creates for one session make one actor and one connection", async () => {
    const u = uid();
    const [a, b] = await Promise.all([f.runtime.create(f.spec(u)), f.runtime.create(f.spec(u))]);
    expect(a.worker).toBe(b.worker);
    expect(callsFor(u).filter((m) => m === "CreateActor")).toHaveLength(1);
    expect(f.tunnel.connections.filter((c) => c.session === `default/${u}`)).toHaveLength(1);
    await f.runtime.stop(a);
  });

  it("create: on a SUSPENDED actor resumes it (its memory), never a cold boot", async () => {
    const u = uid();
    const placed = await f.runtime.create(f.spec(u));
    await f.tunnel.exec(u);
    await f.tunnel.exec(u);
    await f.runtime.snapshot(placed, "EXTERNAL");
    await f.runtime.create(f.spec(u));
    expect(callsFor(u).slice(-2)).toEqual(["GetActor", "ResumeActor"]);
    expect(await f.tunnel.exec(u)).toEqual(["3"]);
    await f.runtime.stop(placed);
  });

  it("create: a refused one-time token fails FAILED_PRECONDITION and the new actor is removed", async () => {
    const u = uid();
    const spec = f.spec(u);
    f.tunnel.refuse(spec.dialback!.token);
    const e = await rejection(f.runtime.create(spec));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain(`attach agentsessions/${u}`);
    expect(f.standin.actor(u)).toBeUndefined();
    expect(await f.runtime.status(inc(u))).toBe(ComputeState.COMPUTE_NONE);
  });

  it("create: a missing dialback or a uid that cannot name an actor is INVALID_ARGUMENT, and nothing is called", async () => {
    const before = f.standin.calls.length;
    expect((await rejection(f.runtime.create({ sessionUid: uid(), harness: "counter" }))).code).toBe(Code.InvalidArgument);
    const bad = await rejection(f.runtime.create({ ...f.spec("x"), sessionUid: "Not_A_Label" }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.rawMessage).toContain("cannot name an actor");
    expect(f.standin.calls.length).toBe(before);
  });
});

describe("snapshot and restore", () => {
  it("snapshot LOCAL: refused FAILED_PRECONDITION; the actor keeps running", async () => {
    const u = uid();
    const placed = await f.runtime.create(f.spec(u));
    const e = await rejection(f.runtime.snapshot(placed, "LOCAL"));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("EXTERNAL");
    expect(f.standin.actor(u)?.state).toBe(ActorState.RUNNING);
    await f.runtime.stop(placed);
  });

  it("snapshot EXTERNAL: suspends the actor (COLD, process gone); the ref names its snapshot with memory; a second one answers the same", async () => {
    const u = uid();
    const placed = await f.runtime.create(f.spec(u));
    const pid = f.standin.actor(u)!.worker!.pid;
    const ref = await f.runtime.snapshot(placed, "EXTERNAL");
    const actor = f.standin.actor(u)!;
    expect(actor.state).toBe(ActorState.SUSPENDED);
    expect(ref).toMatchObject({ local: u, externalUri: actor.snapshot.uri, memory: true, sealed: false });
    expect(ref.externalUri).toMatch(/^standin:\/\//);
    await until(() => isGone(pid), "the actor's process to end");
    expect(await f.runtime.status(placed)).toBe(ComputeState.COMPUTE_COLD);
    const again = await f.runtime.snapshot(placed, "EXTERNAL");
    expect(again.externalUri).toBe(ref.externalUri);
    await f.runtime.stop(placed);
  });

  it("restore: the count continues (memory restored), over a new connection with the new token", async () => {
    const u = uid();
    const first = f.spec(u);
    const placed = await f.runtime.create(first);
    expect(await f.tunnel.exec(u)).toEqual(["1"]);
    expect(await f.tunnel.exec(u)).toEqual(["2"]);
    const ref = await f.runtime.snapshot(placed, "EXTERNAL");
    const second = f.spec(u);
    const restored = await f.runtime.restore(ref, second);
    expect(restored.id).toBe(u);
    expect(f.tunnel.live(u)!.authorization).toBe(`Bearer ${second.dialback!.token}`);
    expect(await f.tunnel.exec(u)).toEqual(["3"]);
    // The connection of the first token died with the checkpoint; that token is spent.
    const old = f.tunnel.connections.filter((c) => c.authorization === `Bearer ${first.dialback!.token}`);
    expect(old).toHaveLength(1);
    expect(old[0]!.closed).toBe(true);
    await f.runtime.stop(placed);
  });

  it("restore: a memory ref whose actor is gone is FAILED_PRECONDITION naming the snapshot; no actor is created", async () => {
    const u = uid();
    const ref = create(SnapshotRefSchema, { local: u, externalUri: "standin://agentsessions/actors/gone/1", memory: true });
    const e = await rejection(f.runtime.restore(ref, f.spec(u)));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("standin://agentsessions/actors/gone/1");
    expect(f.standin.actor(u)).toBeUndefined();
  });

  it("restore: when the attach fails the actor is suspended again with its memory, and a later restore continues the count", async () => {
    const u = uid();
    const placed = await f.runtime.create(f.spec(u));
    expect(await f.tunnel.exec(u)).toEqual(["1"]);
    const ref = await f.runtime.snapshot(placed, "EXTERNAL");
    const refused = f.spec(u);
    f.tunnel.refuse(refused.dialback!.token);
    expect((await rejection(f.runtime.restore(ref, refused))).code).toBe(Code.FailedPrecondition);
    expect(f.standin.actor(u)?.state).toBe(ActorState.SUSPENDED);
    await f.runtime.restore(ref, f.spec(u));
    expect(await f.tunnel.exec(u)).toEqual(["2"]);
    await f.runtime.stop(placed);
  });
});

describe("stop, status and crashes", () => {
  it("stop: suspends and deletes the actor (NONE, process gone); a second Stop succeeds", async () => {
    const u = uid();
    const placed = await f.runtime.create(f.spec(u));
    const pid = f.standin.actor(u)!.worker!.pid;
    await f.runtime.stop(placed);
    expect(callsFor(u).slice(-4)).toEqual(["GetActor", "SuspendActor", "DeleteActor", "DeleteTag"]);
    expect(f.standin.actor(u)).toBeUndefined();
    await until(() => isGone(pid), "the actor's process to end");
    expect(await f.runtime.status(placed)).toBe(ComputeState.COMPUTE_NONE);
    await f.runtime.stop(placed);
  });

  it("status: NONE for a session never placed", async () => {
    expect(await f.runtime.status(inc(uid()))).toBe(ComputeState.COMPUTE_NONE);
  });

  it("crash: an actor whose process died is TERMINATED; Create is FAILED_PRECONDITION with the crash; Stop removes it", async () => {
    const u = uid();
    const placed = await f.runtime.create(f.spec(u));
    process.kill(f.standin.actor(u)!.worker!.pid, "SIGKILL");
    await until(() => f.standin.actor(u)?.state === ActorState.CRASHED, "the actor to be CRASHED");
    expect(await f.runtime.status(placed)).toBe(ComputeState.COMPUTE_TERMINATED);
    const e = await rejection(f.runtime.create(f.spec(u)));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(isRetryableRuntimeError(e)).toBe(false);
    expect(e.rawMessage).toContain("CRASHED");
    expect(e.rawMessage).toContain("process exited");
    await f.runtime.stop(placed);
    expect(f.standin.actor(u)).toBeUndefined();
  });
});

describe("fork (one child)", () => {
  it("fork: a memory ref clones the parent's snapshot for the child, whose count continues the parent's", async () => {
    const parent = uid();
    const placed = await f.runtime.create(f.spec(parent));
    expect(await f.tunnel.exec(parent)).toEqual(["1"]);
    const ref = await f.runtime.snapshot(placed, "EXTERNAL");
    const child = uid();
    const c = await f.runtime.fork(ref, { childSessionUid: child, copyOnWrite: false }, { ...f.spec(parent), dialback: f.tunnel.dialback("counter", child) });
    expect(c.id).toBe(child);
    expect(f.standin.actor(child)?.sourceTag?.name).toBe(`fork-${child}`);
    expect(await f.tunnel.exec(child)).toEqual(["2"]);
    await f.runtime.stop(c);
    expect(f.standin.tag(`fork-${child}`)).toBeUndefined();
    await f.runtime.stop(placed);
  });

  it("fork: a ref without memory places a fresh actor for the child (the host replays its journal)", async () => {
    const child = uid();
    const ref = create(SnapshotRefSchema, { local: uid(), memory: false });
    const c = await f.runtime.fork(
      ref,
      { childSessionUid: child, copyOnWrite: false },
      { sessionUid: ref.local, harness: "counter", dialback: f.tunnel.dialback("counter", child) },
    );
    expect(f.standin.actor(child)?.sourceTag).toBeUndefined();
    expect(await f.tunnel.exec(child)).toEqual(["1"]);
    await f.runtime.stop(c);
  });
});

describe("logs", () => {
  it("logs: one line per RPC, and no line carries a one-time token", () => {
    const all = f.logs.join("\n");
    expect(all).toContain('"msg":"rpc","method":"Create"');
    expect(all).toContain('"msg":"actor attached"');
    for (const token of f.tunnel.tokens()) expect(all).not.toContain(token);
  });
});
