/**
 * The Runtime SPI over HTTP end to end (issue 6 "Done when"): a registered http_runtime harness is
 * placed on the pod runtime, which runs it in a process it starts itself; the process dials back
 * over the tunnel with a one-time token; the host pauses it warm after each turn, stops it cold on
 * Suspend and brings it back on Resume; a memory-snapshot harness is refused before anything.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComputeState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { loadHarnessModules, startPodServer, type PodServer } from "../../../runtimes/pod/index.js";
import { ROOT, startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { waitFor } from "../support/wait.js";

let server: DevServer;
let pod: PodServer;
let client: SessionsClient;
/** The pod's structured log: the test learns each session's process id from it. */
const podLog: Record<string, unknown>[] = [];

beforeAll(async () => {
  server = await startDevServer();
  const harnesses = await loadHarnessModules([
    { name: "pod-echo", path: resolve(ROOT, "examples/harnesses/echo.ts") },
    { name: "pod-counter", path: resolve(ROOT, "examples/harnesses/counter.ts") },
  ]);
  pod = await startPodServer({ harnesses, log: (e) => void podLog.push(e as Record<string, unknown>), stopGraceMs: 2_000 });
  client = new SessionsClient({ server: server.url });
  const registry = createClient(EdgeRegistry, createConnectTransport({ baseUrl: server.url }));
  for (const [name, resumability] of [
    ["pod-echo", Resumability.STATELESS_REPLAY],
    ["pod-counter", Resumability.REQUIRES_MEMORY_SNAPSHOT],
  ] as const) {
    await registry.registerHarness({
      name,
      spec: { capabilities: { resumability } },
      placement: { placement: { case: "httpRuntime", value: { url: pod.url } } },
    });
  }
});

afterAll(async () => {
  await pod?.close();
  await server?.dispose();
});

/** The process the pod runs for a session, from the host's view of its incarnation. */
async function processState(uid: string): Promise<string> {
  const st = await fetch(`${pod.url}/agentsessions.edge.v1.Runtime/Status`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ incarnation: { id: uid } }),
  });
  return ((await st.json()) as { state?: string }).state ?? "COMPUTE_STATE_UNSPECIFIED";
}

function pidState(pid: number): string {
  const stat = `/proc/${pid}/stat`;
  return existsSync(stat) ? readFileSync(stat, "utf8").split(") ")[1]![0]! : "gone";
}

describe("the pod runtime behind the Runtime service", () => {
  it("pod: runs the session's harness in its own process, pauses it warm between turns, suspends and resumes it", async () => {
    const s = await client.create({ harness: "pod-echo" });
    const uid = s.metadata!.uid;
    const first = await client.exec({ session: uid, inputs: ["hello"] });
    expect(first.outputs).toEqual(["echo:hello"]);
    expect(await processState(uid)).toBe("COMPUTE_WARM");
    expect((await client.get(uid)).computeState).toBe(ComputeState.COMPUTE_WARM);

    const second = await client.exec({ session: uid, inputs: ["again"] });
    expect(second.outputs).toEqual(["echo:again"]);
    expect(second.session.computeState).toBe(ComputeState.COMPUTE_WARM);

    const suspended = await client.suspend(uid);
    expect(suspended.computeState).toBe(ComputeState.COMPUTE_COLD);
    expect(await processState(uid)).toBe("COMPUTE_COLD");

    const resumed = await client.resume(uid);
    expect(resumed.computeState).toBe(ComputeState.COMPUTE_LIVE);
    expect(await processState(uid)).toBe("COMPUTE_LIVE");
    // Replay needs the harness running: it is, after Resume. It calls no model.
    expect(await client.verify(uid, { replay: true })).toMatchObject({ chainOk: true, replayOk: true, outputs: ["echo:hello", "echo:again"], modelCalls: 0n });
    const third = await client.exec({ session: uid, inputs: ["third"] });
    expect(third.outputs).toEqual(["echo:third"]);
  });

  it("pod: a paused process is really stopped (SIGSTOP) and resumed, not restarted", async () => {
    const s = await client.create({ harness: "pod-echo" });
    const uid = s.metadata!.uid;
    await client.exec({ session: uid, inputs: ["a"] });
    const started = podLog.filter((e) => e.msg === "incarnation started" && e.session === uid);
    expect(started).toHaveLength(1);
    const pid = Number(started[0]!.pid);
    expect(pid).toBeGreaterThan(0);
    // The pod pauses the process after the turn's reply, so the stop is awaited, not assumed.
    await waitFor(`process ${pid} stopped (state T)`, () => pidState(pid) === "T");
    await client.exec({ session: uid, inputs: ["b"] });
    await waitFor(`process ${pid} stopped again after the turn`, () => pidState(pid) === "T"); // same process
    expect(podLog.filter((e) => e.msg === "incarnation started" && e.session === uid)).toHaveLength(1);
    expect(podLog.some((e) => e.msg === "incarnation resumed" && e.session === uid && e.pid === pid)).toBe(true);
  });

  it("pod: the counter harness (memory snapshots) is refused FAILED_PRECONDITION before anything is written", async () => {
    const s = await client.create({ harness: "pod-counter" });
    const err = await client.exec({ session: s.metadata!.uid, inputs: ["1"] }).catch((e) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).rawMessage).toContain("memory snapshots");
    expect((await client.get(s.metadata!.uid)).lastSeq).toBe(0n);
    expect(await processState(s.metadata!.uid)).toBe("COMPUTE_NONE");
  });
});
