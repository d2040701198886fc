/**
 * The pod runtime (runtimes/pod) through the HTTP runtime client (runtimes/http), over real HTTP:
 * capabilities, Describe, and the incarnation lifecycle observed on the child processes themselves
 * (/proc states) and on a fake tunnel they dial back to.
 */
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { isRetryableRuntimeError } from "../../../runtimes/http/index.js";
import type { Incarnation, SessionSpec } from "../../../runtimes/runtime-spi.js";
import { isGone, isRunning, pidOf, procState, startPodFixture, uid, until, type PodFixture } from "./support.js";
import { rejection } from "../support/rejection.js";

let f: PodFixture;
beforeAll(async () => {
  f = await startPodFixture();
});
afterAll(async () => {
  await f?.close();
});

const spec = (sessionUid: string, harness = "echo2"): SessionSpec => ({ sessionUid, harness, dialback: f.tunnel.dialback(harness, sessionUid) });
const status = (inc: Incarnation | string) => f.runtime.status(typeof inc === "string" ? { id: inc, worker: "", address: "", runtime: "pod", fence: 0n } : inc);

describe("capabilities and describe", () => {
  it("capabilities: all false (a process can be paused, not captured)", async () => {
    const caps = await f.runtime.refreshCapabilities();
    expect({ ...caps, $typeName: undefined }).toEqual({ $typeName: undefined, memorySnapshot: false, cowFork: false, attest: false, gpuState: false });
    expect(f.runtime.capabilities().memorySnapshot).toBe(false);
  });

  it("describe: answers each hosted module's descriptor", async () => {
    const echo = await f.runtime.describe("echo2");
    expect(echo.id).toBe("example-echo");
    expect(echo.capabilities?.resumability).toBe(Resumability.STATELESS_REPLAY);
    const counter = await f.runtime.describe("counter");
    expect(counter.id).toBe("counter");
    expect(counter.capabilities?.resumability).toBe(Resumability.REQUIRES_MEMORY_SNAPSHOT);
  });

  it("describe: an unknown harness is NOT_FOUND, not retryable", async () => {
    const e = await rejection(f.runtime.describe("nope"));
    expect(e.code).toBe(Code.NotFound);
    expect(isRetryableRuntimeError(e)).toBe(false);
    expect(e.rawMessage).toContain("nope");
  });
});

describe("placement", () => {
  it("create: spawns a process that dials back with the one-time token and the harness name", async () => {
    const s = spec(uid());
    const inc = await f.runtime.create(s);
    expect(inc).toMatchObject({ id: s.sessionUid, address: "", runtime: "pod" });
    const pid = pidOf(inc);
    expect(() => process.kill(pid, 0)).not.toThrow();
    expect(isRunning(pid)).toBe(true);
    const conn = f.tunnel.connections.find((c) => c.authorization === `Bearer ${s.dialback!.token}`);
    expect(conn, "a connection carrying the one-time token").toBeDefined();
    expect(conn!.url.pathname).toBe("/harness/v1/connect");
    expect(conn!.url.searchParams.get("name")).toBe("echo2");
    expect(conn!.hello?.name).toBe("echo2");
    expect(conn!.hello?.descriptor?.id).toBe("example-echo");
    expect(conn!.session).toBe(`default/${s.sessionUid}`);
    expect(await status(inc)).toBe(ComputeState.COMPUTE_LIVE);
    await f.runtime.stop(inc);
  });

  it("create: a second Create while live returns the same incarnation without spawning", async () => {
    const u = uid();
    const first = await f.runtime.create(spec(u));
    const before = f.tunnel.connections.length;
    const again = await f.runtime.create(spec(u));
    expect(again.worker).toBe(first.worker);
    expect(f.tunnel.connections.length).toBe(before);
    await f.runtime.stop(first);
  });

  it("create: concurrent Creates for one session start one process", async () => {
    const u = uid();
    const [a, b] = await Promise.all([f.runtime.create(spec(u)), f.runtime.create(spec(u))]);
    expect(a.worker).toBe(b.worker);
    expect(f.tunnel.connections.filter((c) => c.session === `default/${u}`)).toHaveLength(1);
    await f.runtime.stop(a);
  });

  it("create: an unknown harness is NOT_FOUND and starts nothing", async () => {
    const u = uid();
    const e = await rejection(f.runtime.create({ ...spec(u), harness: "nope" }));
    expect(e.code).toBe(Code.NotFound);
    expect(await status(u)).toBe(ComputeState.COMPUTE_NONE);
  });

  it("create: without a dialback is INVALID_ARGUMENT", async () => {
    const e = await rejection(f.runtime.create({ sessionUid: uid(), harness: "echo2" }));
    expect(e.code).toBe(Code.InvalidArgument);
    expect(e.rawMessage).toContain("dialback");
  });

  it("create: a refused one-time token fails FAILED_PRECONDITION and leaves nothing running", async () => {
    const s = spec(uid());
    f.tunnel.refuse(s.dialback!.token);
    const e = await rejection(f.runtime.create(s));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("could not dial back");
    expect(await status(s.sessionUid)).toBe(ComputeState.COMPUTE_NONE);
  });

  it("status: NONE for a session never placed", async () => {
    expect(await status(uid())).toBe(ComputeState.COMPUTE_NONE);
  });
});

describe("snapshot, restore, stop", () => {
  it("snapshot LOCAL: pauses the process (WARM, state T); restore resumes the same process (LIVE)", async () => {
    const s = spec(uid());
    const inc = await f.runtime.create(s);
    const pid = pidOf(inc);
    const ref = await f.runtime.snapshot(inc, "LOCAL");
    expect(ref).toMatchObject({ local: s.sessionUid, memory: false });
    await until(() => procState(pid) === "T", "the process to be stopped");
    expect(await status(inc)).toBe(ComputeState.COMPUTE_WARM);
    // Pausing again is a no-op.
    await f.runtime.snapshot(inc, "LOCAL");
    expect(await status(inc)).toBe(ComputeState.COMPUTE_WARM);

    const back = await f.runtime.restore(ref, { ...s, dialback: f.tunnel.dialback("echo2", s.sessionUid) });
    expect(pidOf(back)).toBe(pid);
    await until(() => isRunning(pid), "the process to run again");
    expect(await status(back)).toBe(ComputeState.COMPUTE_LIVE);
    await f.runtime.stop(back);
  });

  it("create: on a WARM session resumes the paused process", async () => {
    const s = spec(uid());
    const inc = await f.runtime.create(s);
    await f.runtime.snapshot(inc, "LOCAL");
    await until(() => procState(pidOf(inc)) === "T", "the process to be stopped");
    const again = await f.runtime.create(spec(s.sessionUid));
    expect(again.worker).toBe(inc.worker);
    await until(() => isRunning(pidOf(inc)), "the process to run again");
    expect(await status(inc)).toBe(ComputeState.COMPUTE_LIVE);
    await f.runtime.stop(inc);
  });

  it("snapshot EXTERNAL: stops the process (COLD); restore spawns a fresh one with the new dialback", async () => {
    const s = spec(uid());
    const inc = await f.runtime.create(s);
    const pid = pidOf(inc);
    const ref = await f.runtime.snapshot(inc, "EXTERNAL");
    expect(ref).toMatchObject({ local: s.sessionUid, memory: false, externalUri: "" });
    expect(isGone(pid)).toBe(true);
    expect(await status(inc)).toBe(ComputeState.COMPUTE_COLD);
    // Suspending again is a no-op; pausing a cold session is refused.
    await f.runtime.snapshot(inc, "EXTERNAL");
    expect((await rejection(f.runtime.snapshot(inc, "LOCAL"))).code).toBe(Code.FailedPrecondition);

    const fresh = f.tunnel.dialback("echo2", s.sessionUid);
    const back = await f.runtime.restore(ref, { ...s, dialback: fresh });
    expect(pidOf(back)).not.toBe(pid);
    expect(isRunning(pidOf(back))).toBe(true);
    expect(f.tunnel.connections.some((c) => c.authorization === `Bearer ${fresh.token}` && c.hello?.name === "echo2")).toBe(true);
    expect(await status(back)).toBe(ComputeState.COMPUTE_LIVE);
    await f.runtime.stop(back);
  });

  it("snapshot EXTERNAL: a paused process is stopped too", async () => {
    const inc = await f.runtime.create(spec(uid()));
    await f.runtime.snapshot(inc, "LOCAL");
    await f.runtime.snapshot(inc, "EXTERNAL");
    expect(isGone(pidOf(inc))).toBe(true);
    expect(await status(inc)).toBe(ComputeState.COMPUTE_COLD);
  });

  it("stop: kills the process (TERMINATED); a second Stop is a no-op", async () => {
    const inc = await f.runtime.create(spec(uid()));
    await f.runtime.stop(inc);
    expect(isGone(pidOf(inc))).toBe(true);
    expect(await status(inc)).toBe(ComputeState.COMPUTE_TERMINATED);
    await f.runtime.stop(inc);
    expect(await status(inc)).toBe(ComputeState.COMPUTE_TERMINATED);
  });

  it("connection lost: the process ends (NONE); Create then places a fresh one", async () => {
    const s = spec(uid());
    const inc = await f.runtime.create(s);
    const conn = f.tunnel.connections.find((c) => c.authorization === `Bearer ${s.dialback!.token}`)!;
    conn.ws.terminate();
    await until(() => isGone(pidOf(inc)), "the process to end after losing its connection");
    await until(async () => (await status(inc)) === ComputeState.COMPUTE_NONE, "status NONE");
    const again = await f.runtime.create(spec(s.sessionUid));
    expect(again.worker).not.toBe(inc.worker);
    await f.runtime.stop(again);
  });
});

describe("fork", () => {
  it("fork: spawns a second process for the child uid, with the parent's harness", async () => {
    const parent = spec(uid());
    const pInc = await f.runtime.create(parent);
    const ref = await f.runtime.snapshot(pInc, "EXTERNAL");
    const child = uid();
    const dialback = f.tunnel.dialback("echo2", child);
    const cInc = await f.runtime.fork(ref, { childSessionUid: child, copyOnWrite: false }, { sessionUid: parent.sessionUid, harness: "", dialback });
    expect(cInc.id).toBe(child);
    expect(isRunning(pidOf(cInc))).toBe(true);
    expect(pidOf(cInc)).not.toBe(pidOf(pInc));
    expect(f.tunnel.connections.find((c) => c.authorization === `Bearer ${dialback.token}`)?.session).toBe(`default/${child}`);
    expect(await status(cInc)).toBe(ComputeState.COMPUTE_LIVE);
    expect(await status(pInc)).toBe(ComputeState.COMPUTE_COLD);
    await f.runtime.stop(cInc);
  });

  it("fork: without a child uid is INVALID_ARGUMENT", async () => {
    const e = await rejection(
      f.runtime.fork(
        { $typeName: "agentsessions.v1.SnapshotRef", local: uid(), externalUri: "", memory: false, sealed: false },
        { childSessionUid: "", copyOnWrite: false },
        spec(uid()),
      ),
    );
    expect(e.code).toBe(Code.InvalidArgument);
  });
});

describe("logs", () => {
  it("log: one JSON line per RPC, and no token anywhere", () => {
    const rpcs = f.logs.map((l) => JSON.parse(l) as { msg: string; method?: string }).filter((l) => l.msg === "rpc");
    expect(rpcs.some((l) => l.method === "Create")).toBe(true);
    const all = f.logs.join("\n");
    for (const t of f.tunnel.tokens()) expect(all).not.toContain(t);
  });
});
