/**
 * The host (a real `wrangler dev`) placing a registered http_runtime harness on the substrate
 * bridge, which runs it on an actor of the stand-in ateapi (test/fixtures/ateapi): the Worker sends
 * its RUNTIME_TOKEN secret, the actor's harness dials back to the host's tunnel with the one-time
 * token the bridge delivered, Suspend suspends the actor and Resume restores it. A bridge that
 * wants another token refuses the host before anything is journaled. A memory-snapshot harness (the
 * counter) is admitted onto the bridge and its SUSPEND records the actor's snapshot; resuming and
 * forking such a session (the memory tier) are test/node/integration/memory-tier.test.ts.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Lifecycle_Kind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { ComputeState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { ActorState } from "../../../proto/gen/ateapi/control_pb.js";
import { loadHostedHarness, startSubstrateServer, type SubstrateServer } from "../../../runtimes/substrate/index.js";
import { startStandin, type Standin } from "../../fixtures/ateapi/standin.js";
import { HARNESSES } from "../pod/support.js";
import { startHost, type Host } from "../support/host.js";

const TOKEN = "rt_host_to_bridge_0123456789";
let host: Host;
let standin: Standin;
let bridge: SubstrateServer;
let stranger: SubstrateServer;
let counter: SubstrateServer;

beforeAll(async () => {
  host = await startHost({ vars: { RUNTIME_TOKEN: TOKEN } });
  standin = await startStandin({ atespaces: ["agentsessions"], templates: { echo: HARNESSES.echo2, counter: HARNESSES.counter } });
  const common = { ateapiUrl: standin.url, atespace: "agentsessions", template: "echo", routerUrl: standin.routerUrl, log: () => undefined };
  bridge = await startSubstrateServer({ ...common, harness: await loadHostedHarness(`sub-echo=${HARNESSES.echo2}`), token: TOKEN });
  stranger = await startSubstrateServer({
    ...common,
    harness: await loadHostedHarness(`sub-stranger=${HARNESSES.echo2}`),
    token: "rt_some_other_token_0123456789",
  });
  counter = await startSubstrateServer({ ...common, template: "counter", harness: await loadHostedHarness(`sub-counter=${HARNESSES.counter}`), token: TOKEN });
  const registry = createClient(EdgeRegistry, createConnectTransport({ baseUrl: host.url }));
  for (const [name, url, resumability] of [
    ["sub-echo", bridge.url, Resumability.STATELESS_REPLAY],
    ["sub-stranger", stranger.url, Resumability.STATELESS_REPLAY],
    ["sub-counter", counter.url, Resumability.REQUIRES_MEMORY_SNAPSHOT],
  ] as const) {
    await registry.registerHarness({
      name,
      spec: { capabilities: { resumability } },
      placement: { placement: { case: "httpRuntime", value: { url } } },
    });
  }
});

afterAll(async () => {
  await bridge?.close();
  await stranger?.close();
  await counter?.close();
  await standin?.close();
  await host?.stop();
});

describe("the substrate bridge behind the host", () => {
  it("substrate: runs the session's harness on an actor that dials back; Suspend suspends the actor, Resume restores it", async () => {
    const { client } = host;
    const s = await client.create({ harness: "sub-echo" });
    const uid = s.metadata!.uid;
    expect((await client.exec({ session: uid, inputs: ["hello"] })).outputs).toEqual(["echo:hello"]);
    expect(standin.actor(uid)?.state).toBe(ActorState.RUNNING);

    const suspended = await client.suspend(uid);
    expect(suspended.computeState).toBe(ComputeState.COMPUTE_COLD);
    expect(standin.actor(uid)?.state).toBe(ActorState.SUSPENDED);

    const resumed = await client.resume(uid);
    expect(resumed.computeState).toBe(ComputeState.COMPUTE_LIVE);
    expect(standin.actor(uid)?.state).toBe(ActorState.RUNNING);
    expect((await client.exec({ session: uid, inputs: ["again"] })).outputs).toEqual(["echo:again"]);
    expect(await client.verify(uid)).toMatchObject({ chainOk: true });
    expect(await host.kinds(uid)).toContain("LIFECYCLE");
  });

  it("substrate: a bridge that wants another token refuses the host; nothing is journaled and no actor is made", async () => {
    const { client } = host;
    const s = await client.create({ harness: "sub-stranger" });
    const uid = s.metadata!.uid;
    const err = await client.exec({ session: uid, inputs: ["hi"] }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toContain("Authorization: Bearer");
    expect((await client.get(uid)).lastSeq).toBe(0n);
    expect(standin.actor(uid)).toBeUndefined();
  });

  it("substrate: a memory-snapshot harness (the counter) is placed on the bridge; Suspend records the actor's memory snapshot", async () => {
    // Resume and Fork of such a session: test/node/integration/memory-tier.test.ts.
    const { client } = host;
    const s = await client.create({ harness: "sub-counter" });
    const uid = s.metadata!.uid;
    expect((await client.exec({ session: uid, inputs: ["a"] })).outputs).toEqual(["1"]);
    expect((await client.exec({ session: uid, inputs: ["b"] })).outputs).toEqual(["2"]);
    await client.suspend(uid);
    const actor = standin.actor(uid)!;
    expect(actor.state).toBe(ActorState.SUSPENDED);
    const last = (await host.records(uid)).at(-1)!.event!;
    expect(last.body.case).toBe("lifecycle");
    expect(last.body.value).toMatchObject({
      kind: Lifecycle_Kind.LIFECYCLE_SUSPEND,
      snapshotLocal: uid,
      snapshotExternalUri: actor.snapshot.uri,
      snapshotMemory: true,
    });
    expect(standin.state.images.get(actor.snapshot.uri)).toBe(JSON.stringify({ count: 2 }));
  });
});
