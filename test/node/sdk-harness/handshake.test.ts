/**
 * The tunnel handshake and Describe (docs/tunnel.md "Connecting", "The handshake", "Describe"):
 * what the SDK sends first and how it takes a refusal.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { HarnessDescriptorSchema } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ROOT } from "../../../scripts/dev-server.js";
import { SDK_AGENT, SDK_VERSION, serve, type ServeStatus } from "../../../sdk/harness/index.js";
import { startFakeHost } from "./fake-host.js";
import { DESCRIPTOR, harnessOf, serveOn } from "./support.js";

const idle = harnessOf(async () => undefined);

describe("handshake", () => {
  it("connect: sends the subprotocol, the bearer token and the name, then Hello with the descriptor", async () => {
    const { conn, serving, statuses } = await serveOn(idle, { token: "s3cret", maxStreams: 3 });
    expect(conn.protocol).toBe("agentsessions.harness.v1");
    expect(conn.headers.authorization).toBe("Bearer s3cret");
    expect(conn.url).toBe("/harness/v1/connect?name=test-harness");
    const hello = await conn.hello();
    expect(hello.name).toBe("test-harness");
    expect(hello.maxStreams).toBe(3);
    expect(hello.agent).toBe(SDK_AGENT);
    expect(create(HarnessDescriptorSchema, hello.descriptor)).toEqual(DESCRIPTOR);
    expect(serving.connectionId).toBe(conn.id);
    expect(statuses).toEqual([
      { state: "connecting", attempt: 1 },
      { state: "connected", connectionId: conn.id, session: "" },
    ]);
  });

  it("connect: sends no Authorization header without a token", async () => {
    const { conn } = await serveOn(idle);
    expect(conn.headers.authorization).toBeUndefined();
  });

  it("agent: names the package version", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(SDK_VERSION).toBe(pkg.version);
  });

  it("describe: answers Described with the same id and the current descriptor", async () => {
    const { conn } = await serveOn(idle);
    const d = await conn.describe("d-1");
    expect(d.error).toBe("");
    expect(create(HarnessDescriptorSchema, d.descriptor)).toEqual(DESCRIPTOR);
  });

  it("describe: a failing describe answers Described.error", async () => {
    let calls = 0;
    const flaky = { ...idle, describe: () => (++calls === 1 ? DESCRIPTOR : Promise.reject(new Error("no models today"))) };
    const { conn } = await serveOn(flaky);
    const d = await conn.describe("d-2");
    expect(d.descriptor).toBeUndefined();
    expect(d.error).toBe("no models today");
  });

  it("refusal: a 401 stops serving with unauthenticated and the host's message, without retrying", async () => {
    const host = await startFakeHost({ token: "right" });
    const statuses: ServeStatus[] = [];
    const serving = serve({
      url: host.url,
      token: "wrong",
      name: "test-harness",
      harness: idle,
      backoff: { initialMs: 10 },
      onStatus: (s) => statuses.push(s),
    });
    const err = await serving.stopped.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    expect((err as ConnectError).rawMessage).toBe("bad or missing token");
    await expect(serving.connected).rejects.toBe(err);
    expect(host.requests).toHaveLength(1);
    expect(statuses.at(-1)).toEqual({ state: "failed", error: err });
    expect(JSON.stringify(statuses)).not.toContain("wrong");
    await host.close();
  });

  it("refusal: a TunnelError before Welcome (a refused Hello) stops serving with its code", async () => {
    const host = await startFakeHost({ autoWelcome: false });
    const serving = serve({ url: host.url, name: "test-harness", harness: idle });
    const conn = await host.nextConnection();
    await conn.hello();
    conn.send({ message: { case: "error", value: { code: Code.AlreadyExists, message: "the name echo is built in" } } });
    const err = await serving.stopped.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.AlreadyExists);
    expect(err?.rawMessage).toBe("the name echo is built in");
    await host.close();
  });

  it("serve: refuses a bad name or URL before dialing", () => {
    expect(() => serve({ url: "http://127.0.0.1:1", name: "Not_A_Name", harness: idle })).toThrow(/bad harness name/);
    expect(() => serve({ url: "ftp://x", name: "ok", harness: idle })).toThrow(/http\(s\) or ws\(s\)/);
  });

  it("close: says Goodbye, closes the socket and resolves stopped", async () => {
    const { conn, serving, statuses } = await serveOn(idle);
    await conn.hello();
    const closing = serving.close();
    expect(await conn.goodbye()).toMatch(/shutting down/);
    await closing;
    await serving.stopped;
    expect((await conn.closed).code).toBe(1000);
    expect(statuses.at(-1)).toEqual({ state: "closed" });
  });

  it("signal: aborting it closes", async () => {
    const ac = new AbortController();
    const { conn, serving } = await serveOn(idle, { signal: ac.signal });
    ac.abort();
    await serving.stopped;
    expect((await conn.closed).code).toBe(1000);
  });
});
