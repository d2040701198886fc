/**
 * Shared pieces of the SDK tests: a harness built from a run function, and `serveOn`, which serves
 * it to a fake host with test-sized backoff and no pings, and closes everything after the test.
 */
import { create } from "@bufbuild/protobuf";
import { onTestFinished } from "vitest";
import { HarnessDescriptorSchema, Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { serve, type Harness, type HarnessStart, type ServeOptions, type ServeStatus, type Serving } from "../../../sdk/harness/index.js";
import { startFakeHost, type FakeConnection, type FakeHost, type FakeHostOptions } from "./fake-host.js";

export const DESCRIPTOR = create(HarnessDescriptorSchema, {
  id: "test-harness",
  version: "7",
  models: ["echo"],
  capabilities: { resumability: Resumability.STATELESS_REPLAY, forkSafe: true },
});

export function harnessOf(run: Harness["run"]): Harness & { starts: HarnessStart[] } {
  const starts: HarnessStart[] = [];
  return {
    starts,
    describe: () => DESCRIPTOR,
    run: (start, sink) => {
      starts.push(start);
      return run(start, sink);
    },
  };
}

export interface Served {
  host: FakeHost;
  serving: Serving;
  conn: FakeConnection;
  statuses: ServeStatus[];
}

/** A fake host, `serve` against it, and the first connection once it was welcomed. */
export async function serveOn(harness: Harness, o: Partial<ServeOptions> & { host?: FakeHostOptions } = {}): Promise<Served> {
  const host = await startFakeHost(o.host);
  const statuses: ServeStatus[] = [];
  const serving = serve({
    url: host.url,
    name: "test-harness",
    harness,
    pingIntervalMs: 0,
    backoff: { initialMs: 20, maxMs: 100 },
    drainMs: 500,
    ...o,
    onStatus: (s) => statuses.push(s),
  });
  onTestFinished(async () => {
    await serving.close();
    await host.close();
  });
  const conn = await host.nextConnection();
  await serving.connected;
  return { host, serving, conn, statuses };
}

/** A promise with its resolve function outside, for holding a harness mid-run. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
