/**
 * A scripted memory-snapshot backend for session-level tests of the memory tier: what
 * objects/tunnel/served-harness.ts builds for a registered http_runtime harness on the substrate
 * bridge, in process. Like the HTTP runtime client, each `runtime()` is a fresh client that knows
 * no capabilities until its first `describe()` (so a session that gates on a client admission did
 * not use is caught). Snapshots are numbered memory refs; every call is recorded; ForkMany and
 * Restore can be made to fail. The harness is a counter that also reports how much history it got.
 * Used by test/node/session/memory-tier.test.ts.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { HarnessDescriptorSchema, Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, RuntimeCapabilitiesSchema, SnapshotRefSchema, type SnapshotRef } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import type { ForkChild } from "../../../runtimes/runtime-spi.js";
import type { PlacingRuntime } from "../../../objects/session/state.js";

export const MEMORY_DESCRIPTOR = create(HarnessDescriptorSchema, {
  id: "mem-counter",
  version: "1",
  capabilities: { resumability: Resumability.REQUIRES_MEMORY_SNAPSHOT },
});

export interface FakeMemoryBackend {
  /** A fresh client of the backend (capabilities unknown until it describes). */
  runtime(): PlacingRuntime;
  /** A counter harness (its count in `counts`); it outputs `<count> history=<events it was given>`. */
  harness: Harness;
  /** Every call, in order: "describe", "create <uid>", "restore <uid> <uri>", "snapshot <kind> <uid>", "forkMany <uri> <uids>", "stop <uid>", "dialback <uid>". */
  calls: string[];
  /** The refs ForkMany was asked to clone, with their children. */
  forks: { ref: SnapshotRef; children: ForkChild[] }[];
  /** Makes the next ForkMany fail with this error. */
  failForkMany(error: ConnectError): void;
  /** Makes the next memory Restore fail with this error. */
  failRestore(error: ConnectError): void;
  /** Makes the next Stop fail with this error. */
  failStop(error: ConnectError): void;
  /** Runs while the next EXTERNAL snapshot is being taken (a writer racing the checkpoint). */
  duringSnapshot(f: () => void): void;
  /** The harness's next run throws before it outputs anything (a turn that fails). */
  crashNext(): void;
  /** The harness's in-memory count (one for every session here: the fake does not clone memory). */
  counts: { value: number };
}

export function fakeMemoryBackend(): FakeMemoryBackend {
  const calls: string[] = [];
  const forks: FakeMemoryBackend["forks"] = [];
  const counts = { value: 0 };
  let forkError: ConnectError | undefined;
  let restoreError: ConnectError | undefined;
  let stopError: ConnectError | undefined;
  let racer: (() => void) | undefined;
  let crash = false;
  let snapshots = 0;
  const inc = (uid: string) => ({ id: uid, worker: "actor", address: "", runtime: "fake-substrate", fence: 0n });
  const harness: Harness = {
    describe: () => MEMORY_DESCRIPTOR,
    async run(start, sink) {
      if (crash) {
        crash = false;
        throw new Error("the harness crashed");
      }
      counts.value++;
      await sink.output(`${counts.value} history=${start.history.length}`);
    },
  };
  const runtime = (): PlacingRuntime => {
    let described = false;
    return {
      name: "fake-substrate",
      capabilities: () => create(RuntimeCapabilitiesSchema, { memorySnapshot: described }),
      describe: async () => {
        calls.push("describe");
        described = true;
        return MEMORY_DESCRIPTOR;
      },
      dialback: async (_harness, uid) => (calls.push(`dialback ${uid ?? "self"}`), { tunnelUrl: "ws://127.0.0.1:1/harness", token: "one-time" }),
      create: async (spec) => (calls.push(`create ${spec.sessionUid}`), inc(spec.sessionUid)),
      restore: async (ref, spec) => {
        calls.push(`restore ${spec.sessionUid} ${ref.externalUri}`);
        if (ref.memory && restoreError) {
          const e = restoreError;
          restoreError = undefined;
          throw e;
        }
        return inc(spec.sessionUid);
      },
      snapshot: async (i, kind) => {
        calls.push(`snapshot ${kind} ${i.id}`);
        if (kind === "LOCAL") throw new ConnectError("no warm state", Code.FailedPrecondition);
        const race = racer;
        racer = undefined;
        race?.();
        return create(SnapshotRefSchema, { local: i.id, externalUri: `fake://snapshots/${++snapshots}`, memory: true });
      },
      fork: async () => {
        throw new Error("not used: memory forks go through forkMany");
      },
      forkMany: async (ref, children) => {
        calls.push(`forkMany ${ref.externalUri} ${children.map((c) => c.sessionUid).join(",")}`);
        forks.push({ ref, children: [...children] });
        if (forkError) {
          const e = forkError;
          forkError = undefined;
          throw e;
        }
        return children.map((c) => inc(c.sessionUid));
      },
      stop: async (i) => {
        calls.push(`stop ${i.id}`);
        if (stopError) {
          const e = stopError;
          stopError = undefined;
          throw e;
        }
      },
      status: async () => ComputeState.COMPUTE_LIVE,
    };
  };
  return {
    runtime,
    harness,
    calls,
    forks,
    counts,
    failForkMany: (e) => void (forkError = e),
    failRestore: (e) => void (restoreError = e),
    failStop: (e) => void (stopError = e),
    duringSnapshot: (f) => void (racer = f),
    crashNext: () => void (crash = true),
  };
}
