/**
 * Bring-your-own harness over the tunnel (issue 6 "Done when"), against a real `wrangler dev`: a
 * harness served by the SDK (in process, and as an `agentctl harness serve` process) runs sessions
 * exactly like the built-in echo harness; a harness process killed mid-turn is resumed once it is
 * back; registrations pin sessions and enforce descriptor ids; a memory-snapshot harness is
 * refused before anything is written.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventKind, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { HarnessRegistry } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { serve, type Serving } from "../../../sdk/harness/index.js";
import { ROOT, sleep, startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import echo from "../../../examples/harnesses/echo.js";
import counter from "../../../examples/harnesses/counter.js";
import { startFakeOpenAi, type FakeOpenAi } from "../support/fake-openai.js";
import { waitFor } from "../support/wait.js";

let server: DevServer;
let client: SessionsClient;
let gates: FakeOpenAi;
const serving: Serving[] = [];

beforeAll(async () => {
  gates = await startFakeOpenAi();
  server = await startDevServer();
  client = new SessionsClient({ server: server.url });
  for (const [name, harness] of [
    ["remote-echo", echo],
    ["remote-counter", counter],
  ] as const) {
    const s = serve({ url: server.url, name, harness, backoff: { initialMs: 50, maxMs: 200 } });
    serving.push(s);
    await s.connected;
  }
});

afterAll(async () => {
  await Promise.all(serving.map((s) => s.close()));
  await server?.dispose();
  await gates?.close();
});

async function records(uid: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const r of client.replay(uid)) out.push(r);
  return out;
}
const kinds = (rs: LogRecord[]) => rs.map((r) => EventKind[r.event!.kind].replace(/^EVENT_/, ""));

function harnessProcess(file: string, name: string): ChildProcess {
  return spawn(process.execPath, [join(ROOT, "cli/bin/agentctl.js"), "harness", "serve", join(ROOT, file), "--name", name, "--server", server.url], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, AGENTSESSIONS_TOKEN: "" },
  });
}

async function untilConnected(proc: ChildProcess): Promise<void> {
  let out = "";
  proc.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  // The process starts Node and tsx before it dials: seconds on a busy machine.
  await waitFor("the harness process to connect (its serving line)", () => out.includes("serving "));
}

describe("a harness served over the tunnel", () => {
  it("tunnel: exec, replay with zero model calls, fork and resume work as with the built-in echo", async () => {
    const turn = await client.exec({ harness: "remote-echo", inputs: ["hello"] });
    const uid = turn.session.metadata!.uid;
    expect(kinds(turn.records)).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "END"]);
    expect(turn.outputs).toEqual(["echo:hello"]);
    const start = turn.records[0]!.event!.body;
    expect(start.case === "executionStart" && start.value).toMatchObject({ harness: "remote-echo", harnessVersion: "1" });

    const v = await client.verify(uid, { replay: true });
    expect(v).toMatchObject({ chainOk: true, replayOk: true, outputs: ["echo:hello"], modelCalls: 0n });

    const [child] = await client.fork(uid);
    const childTurn = await client.exec({ session: child!.metadata!.uid, inputs: ["child"] });
    expect(childTurn.outputs).toEqual(["echo:child"]);
    expect((await client.get(uid)).lastSeq).toBe(5n);

    const resumed = await client.resume(uid);
    expect(resumed.lastSeq).toBe(6n);
    expect((await client.verify(child!.metadata!.uid, { replay: true })).replayOk).toBe(true);
  });

  it("tunnel: a memory-snapshot harness is refused FAILED_PRECONDITION before anything is written", async () => {
    expect((await counter.describe()).capabilities?.resumability).toBe(Resumability.REQUIRES_MEMORY_SNAPSHOT);
    const s = await client.create({ harness: "remote-counter" });
    const err = await client.exec({ session: s.metadata!.uid, inputs: ["1"] }).catch((e) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).rawMessage).toContain("memory snapshots");
    expect((await client.get(s.metadata!.uid)).lastSeq).toBe(0n);
  });

  it("fork (checklist §8.17 #171): a session on a memory-snapshot harness cannot be forked: FAILED_PRECONDITION, no child in the listing, the parent unchanged", async () => {
    const project = `memfork-${Date.now()}`;
    const s = await client.create({ project, harness: "remote-counter" });
    const uid = s.metadata!.uid;
    for (const count of [1, 3]) {
      const err = await client.fork(uid, { count }).catch((e) => ConnectError.from(e));
      expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
      expect((err as ConnectError).rawMessage).toContain("memory snapshots");
    }
    const listed = [];
    for await (const x of client.list({ project })) listed.push(x.metadata!.uid);
    expect(listed).toEqual([uid]);
    expect(await client.get(uid)).toMatchObject({ lastSeq: 0n, computeState: s.computeState });
  });

  it("fork (checklist §8.17 #175): a Fork carrying any identity is refused INVALID_ARGUMENT with the fixed message before the parent's harness is described; no child, the parent unchanged", async () => {
    let described = 0;
    const counted = { ...echo, describe: (signal?: AbortSignal) => (described++, echo.describe(signal)) };
    const s = serve({ url: server.url, name: "remote-described", harness: counted, backoff: { initialMs: 50, maxMs: 200 } });
    try {
      await s.connected;
      const project = `forkid-${Date.now()}`;
      const parent = await client.create({ project, harness: "remote-described" });
      const uid = parent.metadata!.uid;
      await client.exec({ session: uid, inputs: ["hi"] });
      const before = await records(uid);
      const describedBefore = described;
      const PRINCIPAL = "agent://do-not-echo-this-principal";
      for (const [session, identity] of [
        [uid, {}],
        [uid, { principal: PRINCIPAL, subject: "s" }],
        ["s_unknown0000000000000000000000", { principal: PRINCIPAL }],
        ["", { principal: PRINCIPAL }],
      ] as const) {
        const err = await client.raw.fork({ session, identity, count: 2 }).catch((e) => ConnectError.from(e));
        expect((err as ConnectError).code).toBe(Code.InvalidArgument);
        expect((err as ConnectError).rawMessage).toBe("ForkRequest.identity is unsupported: per-child principals are not enforced");
      }
      expect(described).toBe(describedBefore);
      const listed = [];
      for await (const x of client.list({ project })) listed.push(x.metadata!.uid);
      expect(listed).toEqual([uid]);
      expect(await records(uid)).toEqual(before);
      // Without an identity the same Fork describes the parent's harness (CanPlace) and forks.
      expect(await client.fork(uid)).toHaveLength(1);
      expect(described).toBeGreaterThan(describedBefore);
    } finally {
      await s.close();
    }
  });

  // The SDK answers `described{error}`; HarnessTunnel.describe keeps that apart from a timeout or a
  // disconnect, and admission maps it to INTERNAL, as it does for a runtime backend's answered error.
  it("admission (checklist §8.16 #150): a connected harness that answers Describe with an error is neither unavailable nor a cancellation (INTERNAL), and nothing is written", async () => {
    let calls = 0;
    const refusing = { ...echo, describe: (signal?: AbortSignal) => (calls++ === 0 ? echo.describe(signal) : Promise.reject(new Error("describe exploded"))) };
    const s = serve({ url: server.url, name: "remote-refusing", harness: refusing, backoff: { initialMs: 50, maxMs: 200 } });
    try {
      await s.connected;
      const created = await client.create({ harness: "remote-refusing" });
      const err = await client.exec({ session: created.metadata!.uid, inputs: ["x"] }).catch((e) => ConnectError.from(e));
      expect((await client.get(created.metadata!.uid)).lastSeq).toBe(0n);
      expect((err as ConnectError).code).toBe(Code.Internal);
    } finally {
      await s.close();
    }
  });

  it("tunnel: a name nobody serves is unknown; a name served before but not now is unavailable", async () => {
    const unknown = await client.create({ harness: "never-connected" }).catch((e) => ConnectError.from(e));
    expect((unknown as ConnectError).code).toBe(Code.InvalidArgument);
    const proc = harnessProcess("examples/harnesses/echo.ts", "comes-and-goes");
    await untilConnected(proc);
    const s = await client.create({ harness: "comes-and-goes" });
    proc.kill("SIGKILL");
    await new Promise((ok) => proc.once("exit", ok));
    await sleep(200);
    const err = await client.exec({ session: s.metadata!.uid, inputs: ["x"] }).catch((e) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect((await client.get(s.metadata!.uid)).lastSeq).toBe(0n);
  });

  it("fault: the harness process killed mid-turn; once it is back, Resume finishes the turn and the chain verifies", async () => {
    let proc = harnessProcess("test/fixtures/harnesses/hold.ts", "remote-hold");
    await untilConnected(proc);
    const s = await client.create({ harness: "remote-hold" });
    const uid = s.metadata!.uid;
    const config = new TextEncoder().encode(JSON.stringify({ hold_url: `${gates.url}/hold/${uid}` }));
    const turn = client.exec({ session: uid, inputs: ["survive"], config }).catch((e) => ConnectError.from(e));
    await waitFor("the held turn to reach its gate", () => gates.gateRequests(uid) > 0);
    expect(gates.gateRequests(uid)).toBe(1);
    proc.kill("SIGKILL");
    const failed = await turn;
    expect((failed as ConnectError).code).toBe(Code.Internal);
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "ERROR"]);

    gates.openGate(uid);
    proc = harnessProcess("test/fixtures/harnesses/hold.ts", "remote-hold");
    await untilConnected(proc);
    const resumed = await client.resume(uid);
    expect(kinds(await records(uid))).toEqual(["EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "ERROR", "END", "LIFECYCLE"]);
    expect(resumed.lastSeq).toBe(7n);
    // Replay re-runs the harness too, so it needs one connected; it then calls no model.
    expect(await client.verify(uid, { replay: true })).toMatchObject({ chainOk: true, replayOk: true, modelCalls: 0n, outputs: ["echo:survive"] });
    proc.kill("SIGTERM");
  });
});

describe("registered tunnel harnesses", () => {
  const registry = () => createClient(HarnessRegistry, createConnectTransport({ baseUrl: server.url }));
  // Tunnel placements are ours: registered through agentsessions.edge.v1.EdgeRegistry, beside the spec.
  const edgeRegistry = () => createClient(EdgeRegistry, createConnectTransport({ baseUrl: server.url }));
  const tunnel = { placement: { case: "tunnel" as const, value: {} } };

  it("registry: sessions are pinned to a registered harness; its descriptor id is enforced; retired ones refuse new sessions", async () => {
    const reg = registry();
    await edgeRegistry().registerHarness({
      name: "remote-echo",
      spec: { capabilities: { resumability: Resumability.STATELESS_REPLAY }, descriptorId: "example-echo" },
      placement: tunnel,
    });
    const s = await client.create({ harness: "remote-echo" });
    const ok = await client.exec({ session: s.metadata!.uid, inputs: ["pinned"] });
    expect(ok.outputs).toEqual(["echo:pinned"]);
    const override = await client.exec({ session: s.metadata!.uid, inputs: ["x"], harness: "echo" }).catch((e) => ConnectError.from(e));
    expect((override as ConnectError).code).toBe(Code.FailedPrecondition);
    const onto = await client.create({});
    const onto2 = await client.exec({ session: onto.metadata!.uid, inputs: ["x"], harness: "remote-echo" }).catch((e) => ConnectError.from(e));
    expect((onto2 as ConnectError).code).toBe(Code.FailedPrecondition);

    const observed = await reg.getHarness({ name: "remote-echo", observe: true });
    expect(observed.observed?.id).toBe("example-echo");

    await edgeRegistry().registerHarness({
      name: "wrong-id",
      spec: { capabilities: { resumability: Resumability.STATELESS_REPLAY }, descriptorId: "someone-else" },
      placement: tunnel,
    });
    const p = serve({ url: server.url, name: "wrong-id", harness: echo });
    await p.connected;
    const w = await client.create({ harness: "wrong-id" });
    const mismatch = await client.exec({ session: w.metadata!.uid, inputs: ["x"] }).catch((e) => ConnectError.from(e));
    await p.close();
    expect((mismatch as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((await client.get(w.metadata!.uid)).lastSeq).toBe(0n);

    await reg.retireHarness({ name: "remote-echo", reason: "replaced" });
    const retired = await client.create({ harness: "remote-echo" }).catch((e) => ConnectError.from(e));
    expect((retired as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((await client.exec({ session: s.metadata!.uid, inputs: ["still works"] })).outputs).toEqual(["echo:still works"]);
  });
});
