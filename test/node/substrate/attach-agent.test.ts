/**
 * The actor agent (runtimes/substrate/agent/attach-agent.ts) on its own, over real HTTP, against a
 * fake host tunnel with one-time tokens: which Attach keeps the live connection and which dials
 * again (a restore; another session, as a fork child's first attach is), its token, and a refused
 * dialback. The bridge's tests drive it through the stand-in's router.
 */
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorAgent } from "../../../proto/gen/agentsessions/edge/v1/actor_agent_pb.js";
import { importHarness } from "../../../runtimes/node/harness-modules.js";
import { startAttachAgent, type AttachAgent } from "../../../runtimes/substrate/index.js";
import { startFakeTunnel, type FakeTunnel } from "../pod/fake-tunnel.js";
import { until } from "../pod/support.js";
import { HARNESSES, uid } from "./support.js";

const TOKEN = "at_0123456789abcdef0123";
let tunnel: FakeTunnel;
let agent: AttachAgent;
let client: Client<typeof ActorAgent>;
const logs: string[] = [];

beforeAll(async () => {
  tunnel = await startFakeTunnel({ oneTime: true });
  agent = await startAttachAgent({
    harness: await importHarness(HARNESSES.counter),
    name: "counter",
    token: TOKEN,
    log: (l) => void logs.push(JSON.stringify(l)),
    readyTimeoutMs: 10_000,
  });
  client = createClient(ActorAgent, createConnectTransport({ baseUrl: agent.url, httpVersion: "1.1" }));
});
afterAll(async () => {
  await agent?.close();
  await tunnel?.close();
});

const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
const attach = (session: string, restored = false) => client.attach({ sessionUid: session, dialback: tunnel.dialback("counter", session), restored }, auth);

async function failure(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(e instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(e)}`);
  return e;
}

describe("actor agent: attach", () => {
  it("attach: dials the host with the token, answers with the connection; the same session again keeps it", async () => {
    const s = uid();
    const first = await attach(s);
    expect(first.keptConnection).toBe(false);
    expect(first.connectionId).toMatch(/^conn-/);
    expect(agent.session).toBe(s);
    expect(await tunnel.exec(s)).toEqual(["1"]);
    const connections = tunnel.connections.length;
    const again = await attach(s);
    expect(again).toMatchObject({ connectionId: first.connectionId, keptConnection: true });
    expect(tunnel.connections.length).toBe(connections);
  });

  it("attach: restored dials again even for the same session (the old connection died with the checkpoint)", async () => {
    const s = uid();
    const first = await attach(s);
    const restored = await attach(s, true);
    expect(restored.keptConnection).toBe(false);
    expect(restored.connectionId).not.toBe(first.connectionId);
    await until(() => tunnel.connections.find((c) => c.id === first.connectionId)?.closed === true, "the old connection to close");
  });

  it("attach: another session (a fork child's first attach) closes the cloned connection, then serves the new one", async () => {
    const parent = uid();
    const child = uid();
    const p = await attach(parent);
    const c = await attach(child);
    expect(agent.session).toBe(child);
    await until(() => tunnel.connections.find((x) => x.id === p.connectionId)?.closed === true, "the parent's connection to close");
    expect(tunnel.connections.find((x) => x.id === c.connectionId)?.session).toBe(`default/${child}`);
  });

  it("attach: a dialback the host refuses is FAILED_PRECONDITION; no session is served", async () => {
    const s = uid();
    const dialback = tunnel.dialback("counter", s);
    tunnel.refuse(dialback.token);
    const e = await failure(client.attach({ sessionUid: s, dialback, restored: true }, auth));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("could not dial back");
    expect(agent.session).toBe("");
  });

  it("attach: without the agent's token it is UNAUTHENTICATED; without a dialback INVALID_ARGUMENT", async () => {
    expect((await failure(client.attach({ sessionUid: uid(), dialback: tunnel.dialback("counter", "x") }))).code).toBe(Code.Unauthenticated);
    expect((await failure(client.attach({ sessionUid: uid() }, auth))).code).toBe(Code.InvalidArgument);
  });

  it("healthz: GET /healthz answers 200 without a token (the template's wakeup probe)", async () => {
    const res = await fetch(`${agent.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok\n");
  });

  it("logs: the agent never writes a token", () => {
    const all = logs.join("\n");
    expect(all).toContain('"msg":"attached"');
    expect(all).not.toContain(TOKEN);
    for (const t of tunnel.tokens()) expect(all).not.toContain(t);
  });
});
