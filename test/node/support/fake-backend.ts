/**
 * A scripted runtime backend for session-level tests: it stands in for what
 * objects/tunnel/served-harness.ts builds for a registered http_runtime harness (a PlacingRuntime),
 * records every call, and lets a test change what it describes or make a call fail.
 * Used by test/node/session/placement-gates.test.ts and operational-faults.test.ts.
 */
import { create } from "@bufbuild/protobuf";
import type { HarnessDescriptor } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, RuntimeCapabilitiesSchema, SnapshotRefSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import type { PlacingRuntime } from "../../../objects/session/state.js";

export interface FakeBackend {
  runtime: PlacingRuntime;
  /** Every call, in order: "describe", "create", "restore", "snapshot LOCAL", "snapshot EXTERNAL", "stop". */
  calls: string[];
  /** What Describe answers (the backend's word for a harness it has not started). */
  describes: { descriptor: HarnessDescriptor };
  /** Throws this from the next `n` EXTERNAL snapshots. */
  failExternalSnapshots(n: number, error: Error): void;
}

export function fakeBackend(descriptor: HarnessDescriptor): FakeBackend {
  const calls: string[] = [];
  const describes = { descriptor };
  let failing = 0;
  let failure: Error | undefined;
  let n = 0;
  const inc = (uid: string) => ({ id: uid, worker: "pod-1", address: "", runtime: "fake-pod", fence: 0n });
  const runtime: PlacingRuntime = {
    name: "fake-pod",
    capabilities: () => create(RuntimeCapabilitiesSchema, {}),
    describe: async () => (calls.push("describe"), describes.descriptor),
    dialback: async () => ({ tunnelUrl: "ws://127.0.0.1:1/harness", token: "one-time" }),
    create: async (spec) => (calls.push("create"), inc(spec.sessionUid)),
    restore: async (_ref, spec) => (calls.push("restore"), inc(spec.sessionUid)),
    snapshot: async (i, kind) => {
      calls.push(`snapshot ${kind}`);
      if (kind === "EXTERNAL" && failing > 0) {
        failing--;
        throw failure;
      }
      return create(SnapshotRefSchema, { local: i.id, externalUri: `pod://snapshots/${++n}` });
    },
    fork: async () => {
      throw new Error("not used");
    },
    stop: async () => void calls.push("stop"),
    status: async () => ComputeState.COMPUTE_LIVE,
  };
  return {
    runtime,
    calls,
    describes,
    failExternalSnapshots(count, error) {
      failing = count;
      failure = error;
    },
  };
}
