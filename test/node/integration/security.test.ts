/**
 * The hosted endpoint with AUTH_MODE=keys, against a real `wrangler dev` (issue 7 "Done when"):
 * every RPC refuses an unauthenticated caller; tenant B can neither read nor touch tenant A's
 * sessions, harnesses or registrations, nor tell whether they exist; a read-only key cannot write;
 * the recorded identity is the authenticated one; limits refuse before anything is written.
 */
import { createHash } from "node:crypto";
import { create, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Audit } from "../../../proto/gen/agentsessions/edge/v1/audit_pb.js";
import { Tail } from "../../../proto/gen/agentsessions/edge/v1/tail_pb.js";
import { MessageSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { EdgeRegistry } from "../../../proto/gen/agentsessions/edge/v1/placement_pb.js";
import { HarnessRegistry } from "../../../proto/gen/agentsessions/v1/harness_registry_pb.js";
import { Sessions } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { agentctl, sessionOf } from "../cli/run-agentctl.js";
import { startDevServer, type DevServer } from "../../../scripts/dev-server.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const KEYS = {
  aWrite: { token: "tok-a-write", tenant: "tenant-a", principal: "writer@a", roles: ["write"] },
  aRead: { token: "tok-a-read", tenant: "tenant-a", principal: "reader@a", roles: ["read"] },
  aApprove: { token: "tok-a-approve", tenant: "tenant-a", principal: "approver@a", roles: ["read", "approve"] },
  aAdmin: { token: "tok-a-admin", tenant: "tenant-a", principal: "admin@a", roles: ["admin"] },
  aHarness: { token: "tok-a-harness", tenant: "tenant-a", principal: "runner@a", roles: ["harness"] },
  bAll: { token: "tok-b-admin", tenant: "tenant-b", principal: "admin@b", roles: ["admin"] },
};
const entries = () => Object.entries(KEYS).map(([id, k]) => ({ id, sha256: sha(k.token), tenant: k.tenant, principal: k.principal, roles: k.roles }));
/** A key minted by `agentctl key new`, as an operator would. */
let minted: { key: string; entry: { sha256: string; tenant: string; principal: string; roles: string[] } };

let server: DevServer;
const as = (k: keyof typeof KEYS) => new SessionsClient({ server: server.url, token: KEYS[k].token, binary: false });

beforeAll(async () => {
  const run = await agentctl(["key", "new", "--tenant", "tenant-a", "--principal", "minted@a", "--roles", "read", "--json"]);
  minted = JSON.parse(run.stdout) as typeof minted;
  server = await startDevServer({
    vars: {
      AUTH_MODE: "keys",
      AUTH_KEYS: JSON.stringify([...entries(), minted.entry]),
      TEST_HARNESSES: "1",
      MAX_INPUTS_PER_EXEC: "3",
      MAX_FORK_COUNT: "4",
      MAX_STRUCT_DEPTH: "5",
      MAX_REQUEST_BYTES: "65536",
      MAX_EVENT_BYTES: "20000",
    },
  });
});

afterAll(async () => {
  await server?.dispose();
});

function raw<S extends DescService>(service: S, token?: string): Client<S> {
  return createClient(
    service,
    createConnectTransport({
      baseUrl: server.url,
      interceptors: token ? [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] : [],
    }),
  );
}

/** Calls any method with an empty request, draining a stream; the ConnectError it ends with. */
async function callEmpty(service: DescService, method: DescMethod, token?: string): Promise<ConnectError | undefined> {
  const c = raw(service, token) as unknown as Record<string, (req: object) => unknown>;
  try {
    const out = c[method.localName]!(create(method.input as DescMessage));
    if (method.methodKind === "server_streaming") for await (const _ of out as AsyncIterable<unknown>) void _;
    else await out;
    return undefined;
  } catch (e) {
    return ConnectError.from(e);
  }
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** A tunnel registration: our placement beside a placement-free spec (agentsessions.edge.v1.EdgeRegistry). */
const TUNNEL = { spec: { capabilities: { resumability: Resumability.STATELESS_REPLAY } }, placement: { placement: { case: "tunnel" as const, value: {} } } };
const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e) => ConnectError.from(e),
  );

describe("authentication", () => {
  it("every RPC of every service refuses a missing or unknown key UNAUTHENTICATED, with a hint", async () => {
    let checked = 0;
    for (const service of [Sessions, HarnessRegistry, EdgeRegistry, Audit, Tail]) {
      for (const method of service.methods) {
        for (const token of [undefined, "not-a-key"]) {
          const err = await callEmpty(service, method, token);
          expect(err?.code, `${service.typeName}/${method.name} with ${token ?? "no token"}: ${err?.message}`).toBe(Code.Unauthenticated);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(0);
    }
    expect(checked).toBe(
      2 * (Sessions.methods.length + HarnessRegistry.methods.length + EdgeRegistry.methods.length + Audit.methods.length + Tail.methods.length),
    );
    const err = await callEmpty(Sessions, Sessions.method.listSessions);
    expect(err!.rawMessage).toContain("AGENTSESSIONS_TOKEN");
  });

  it("a read-only key reads but cannot write (PERMISSION_DENIED naming the role); approve needs the approve role", async () => {
    const uid = (await as("aWrite").create()).metadata!.uid;
    await as("aWrite").exec({ session: uid, inputs: ["hi"] });
    expect((await as("aRead").get(uid)).lastSeq).toBeGreaterThan(0n);
    const r = as("aRead");
    const writes = [() => r.create(), () => r.exec({ session: uid, inputs: ["no"] }), () => r.suspend(uid), () => r.delete(uid), () => r.fork(uid)];
    for (const write of writes) {
      const err = await errorOf(write());
      expect(err?.code).toBe(Code.PermissionDenied);
      expect(err?.rawMessage).toMatch(/needs the write role/);
    }
    const approve = await errorOf(as("aWrite").approve(uid, { executionId: "e", toolCallId: "c", requestSeq: 1n, approved: false }));
    expect(approve?.code).toBe(Code.PermissionDenied);
    expect((await as("aRead").get(uid)).lastSeq).toBe((await as("aWrite").get(uid)).lastSeq);
  });
});

describe("agentctl with a key", () => {
  it("no key: exit 1 and a hint to pass --token; --token or AGENTSESSIONS_TOKEN works; a read key's write is permission denied", async () => {
    const server_ = ["--server", server.url];
    const bare = await agentctl(["list", ...server_]);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(/^agentctl list: unauthenticated: an API key is required: .*--token or AGENTSESSIONS_TOKEN\)\n$/);
    const created = await agentctl(["create", ...server_, "--token", KEYS.aWrite.token]);
    expect(created.code).toBe(0);
    const uid = sessionOf(created);
    const viaEnv = await agentctl(["get", uid, ...server_], { env: { AGENTSESSIONS_TOKEN: KEYS.aRead.token } });
    expect(viaEnv.code).toBe(0);
    expect(viaEnv.stdout).toContain(uid);
    const denied = await agentctl(["exec", "--session", uid, "--input", "hi", ...server_], { env: { AGENTSESSIONS_TOKEN: KEYS.aRead.token } });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^agentctl exec: permission denied: reader@a may not call Exec: it needs the write role/);
  });

  it("agentctl key new: the key works, the entry holds only its SHA-256", async () => {
    expect(minted.entry.sha256).toBe(sha(minted.key));
    expect(JSON.stringify(minted.entry)).not.toContain(minted.key);
    expect(minted.entry).toMatchObject({ tenant: "tenant-a", principal: "minted@a", roles: ["read"] });
    const listed = await agentctl(["list", "--server", server.url, "--token", minted.key]);
    expect(listed.code, listed.stderr).toBe(0);
    const bad = await agentctl(["key", "new", "--tenant", "Acme", "--principal", "p", "--roles", "read"]);
    expect(bad.code).toBe(2);
    expect((await agentctl(["key", "new", "--tenant", "acme", "--principal", "p", "--roles", "root"])).stderr).toMatch(/not: root/);
  });
});

describe("tenant isolation", () => {
  it("tenant B cannot read, list, exec, fork, approve, replay, verify or delete tenant A's session, nor tell it exists", async () => {
    const a = as("aWrite");
    const uid = (await a.create({ name: "secret-a" })).metadata!.uid;
    await a.exec({ session: uid, inputs: ["private"] });
    const head = await a.get(uid);
    const b = as("bAll");
    const nowhere = "sess-" + "0".repeat(24);
    const attempts = (target: string) => [
      b.get(target),
      b.exec({ session: target, inputs: ["x"] }),
      b.fork(target),
      b.approve(target, { executionId: "e", toolCallId: "c", requestSeq: 1n, approved: false }),
      (async () => {
        for await (const _ of b.replay(target)) void _;
      })(),
      b.verify(target),
      b.suspend(target),
      b.resume(target),
      b.cancel(target),
      b.delete(target),
    ];
    const onA = await Promise.all(attempts(uid).map(errorOf));
    const onNothing = await Promise.all(attempts(nowhere).map(errorOf));
    for (const [i, err] of onA.entries()) {
      expect(err?.code, `attempt ${i}`).toBe(Code.NotFound);
      // The same answer as for a uid that was never created: nothing tells them apart.
      expect(err?.rawMessage.replaceAll(uid, "<uid>"), `attempt ${i}`).toBe(onNothing[i]?.rawMessage.replaceAll(nowhere, "<uid>"));
    }
    const listed = await collect(b.list());
    expect(listed.map((s) => s.metadata!.uid)).not.toContain(uid);
    const after = await a.get(uid);
    expect([after.lastSeq, after.metadata!.version]).toEqual([head.lastSeq, head.metadata!.version]);
    expect((await collect(a.list())).map((s) => s.metadata!.uid)).toContain(uid);
  });

  it("registrations and tunnel harnesses belong to one tenant", async () => {
    const regA = raw(HarnessRegistry, KEYS.aAdmin.token);
    await raw(EdgeRegistry, KEYS.aAdmin.token).registerHarness({ name: "a-only", ...TUNNEL });
    const regB = raw(HarnessRegistry, KEYS.bAll.token);
    expect((await errorOf(regB.getHarness({ name: "a-only" })))?.code).toBe(Code.NotFound);
    expect((await regB.listHarnesses({})).harnesses.map((h) => h.metadata?.name)).not.toContain("a-only");
    expect((await regA.listHarnesses({})).harnesses.map((h) => h.metadata?.name)).toContain("a-only");
    expect((await errorOf(as("bAll").create({ harness: "a-only" })))?.code).toBe(Code.InvalidArgument);
    expect((await as("aWrite").create({ harness: "a-only" })).harness).toBe("a-only");
    expect((await errorOf(raw(EdgeRegistry, KEYS.aWrite.token).registerHarness({ name: "nope", ...TUNNEL })))?.code).toBe(Code.PermissionDenied);
  });

  it("the tunnel: no key is 401, a key without the harness role is 403, a harness key connects for its tenant only", async () => {
    const dial = (token?: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/harness/v1/connect?name=iso-echo`, "agentsessions.harness.v1", {
          headers: token ? { authorization: `Bearer ${token}` } : {},
        });
        ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.on("open", () => (ws.close(), resolve(101)));
        ws.on("error", () => resolve(-1));
      });
    expect(await dial()).toBe(401);
    expect(await dial("not-a-key")).toBe(401);
    expect(await dial(KEYS.aRead.token)).toBe(403);
    expect(await dial(KEYS.aHarness.token)).toBe(101);
    // It said no Hello, but the name is now known to tenant A only.
    expect((await errorOf(as("bAll").create({ harness: "iso-echo" })))?.code).toBe(Code.InvalidArgument);
  });
});

describe("identity", () => {
  it("the session's identity and an approval's actor are the authenticated principal; claiming another is refused", async () => {
    const a = as("aWrite");
    const s = await a.create();
    expect(s.identity).toMatchObject({ principal: "writer@a", issuer: "apikey", subject: "aWrite" });
    const forged = await errorOf(a.raw.createSession({ session: { identity: { principal: "admin@a" } } }));
    expect(forged?.code).toBe(Code.PermissionDenied);
    const same = await a.raw.createSession({ session: { identity: { principal: "writer@a", issuer: "apikey", subject: "aWrite" } } });
    expect(same.identity?.principal).toBe("writer@a");

    const gated = (await a.create({ harness: "tools" })).metadata!.uid;
    const config = new TextEncoder().encode(JSON.stringify({ calls: [{ id: "c1", tool: "pay", mediation: "REQUIRES_APPROVAL" }] }));
    await a.exec({ session: gated, inputs: ["go"], config });
    const pending = (await a.get(gated)).pendingApproval!;
    expect(pending.toolCallId).toBe("c1");
    const decision = { executionId: pending.executionId, toolCallId: "c1", requestSeq: pending.requestSeq, approved: false };
    const claimed = await errorOf(as("aApprove").approve(gated, { ...decision, identity: { principal: "writer@a", issuer: "", subject: "" } }));
    expect(claimed?.code).toBe(Code.PermissionDenied);
    const r = await as("aApprove").approve(gated, decision);
    expect(r.decision?.event?.actor).toMatchObject({ principal: "approver@a", issuer: "apikey", subject: "aApprove" });
  });
});

describe("limits", () => {
  const text = (s: string) => create(MessageSchema, { role: "user", parts: [{ part: { case: "text", value: { text: s } } }] });

  it("too many inputs, too deep a Struct, too many children: INVALID_ARGUMENT, nothing written", async () => {
    const a = as("aWrite");
    const uid = (await a.create({ harness: "echo" })).metadata!.uid;
    const many = await errorOf(a.exec({ session: uid, inputs: ["1", "2", "3", "4"] }));
    expect(many?.code).toBe(Code.InvalidArgument);
    expect(many?.rawMessage).toMatch(/at most 3 inputs/);
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 8; i++) deep = { d: deep };
    const nested = create(MessageSchema, { role: "user", parts: [{ part: { case: "toolResult", value: { id: "t", output: deep as never } } }] });
    const tooDeep = await errorOf(
      (async () => {
        for await (const _ of a.raw.exec({ session: uid, inputs: [nested] })) void _;
      })(),
    );
    expect(tooDeep?.code).toBe(Code.InvalidArgument);
    expect(tooDeep?.rawMessage).toMatch(/more than 5 levels/);
    expect((await errorOf(a.fork(uid, { count: 5 })))?.code).toBe(Code.InvalidArgument);
    expect((await a.get(uid)).lastSeq).toBe(0n);
    // Within the limits the same session runs.
    expect((await a.exec({ session: uid, inputs: ["1", "2", "3"] })).outputs).toHaveLength(1);
  });

  it("a request over MAX_REQUEST_BYTES and an event over MAX_EVENT_BYTES: RESOURCE_EXHAUSTED, nothing written", async () => {
    const a = as("aWrite");
    const uid = (await a.create({ harness: "echo" })).metadata!.uid;
    const huge = await errorOf(
      (async () => {
        for await (const _ of a.raw.exec({ session: uid, inputs: [text("x".repeat(70_000))] })) void _;
      })(),
    );
    expect(huge?.code).toBe(Code.ResourceExhausted);
    const big = await errorOf(a.exec({ session: uid, inputs: ["y".repeat(30_000)] }));
    expect(big?.code, big?.message).toBe(Code.ResourceExhausted);
    expect((await a.get(uid)).lastSeq).toBe(0n);
  });
});
