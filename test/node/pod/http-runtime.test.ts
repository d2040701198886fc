/**
 * The HTTP runtime client's failure classification (runtimes/http/http-runtime-error.ts) and wire
 * checks, against scripted fetch answers (the `fetch` option) and one real closed port.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  CreateRequestSchema,
  ForkManyRequestSchema,
  ForkManyResponseSchema,
  IncarnationSchema,
  SnapshotKind,
  SnapshotRequestSchema,
  StatusResponseSchema,
} from "../../../proto/gen/agentsessions/edge/v1/runtime_pb.js";
import { RuntimeCapabilitiesSchema, SnapshotRefSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { HarnessDescriptorSchema } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { freePort } from "../../../scripts/dev-server.js";
import { createHttpRuntime, isRetryableRuntimeError, retryAfterMsOf } from "../../../runtimes/http/index.js";
import type { Incarnation } from "../../../runtimes/runtime-spi.js";

const BASE = "http://runtime.test:9400";
const INC: Incarnation = { id: "sess-1", worker: "w/1", address: "", runtime: "pod", fence: 3n };
const SPEC = { sessionUid: "sess-1", harness: "echo2", dialback: { tunnelUrl: "http://host/harness/v1/connect?name=echo2", token: "ot_secret" } };

interface Seen {
  path: string;
  redirect: RequestRedirect | undefined;
  body: Uint8Array;
  authorization: string | null;
}

/** A runtime whose every call is answered by `answer`; `seen` records what was fetched. */
function scripted(answer: (path: string) => Response | Promise<Response>, token?: string) {
  const seen: Seen[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const path = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).pathname;
    const authorization = new Headers(init?.headers).get("authorization");
    seen.push({ path, redirect: init?.redirect, body: init?.body instanceof Uint8Array ? init.body : new Uint8Array(), authorization });
    return answer(path);
  };
  return { runtime: createHttpRuntime({ baseUrl: BASE, fetch, timeoutMs: 2_000, token }), seen };
}

const proto = (bytes: Uint8Array) => new Response(bytes.slice(), { status: 200, headers: { "content-type": "application/proto" } });
const connectError = (status: number, code: string, message: string) =>
  new Response(JSON.stringify({ code, message }), { status, headers: { "content-type": "application/json" } });

async function failure(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(e instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(e)}`);
  return e;
}

describe("http runtime: failures", () => {
  it("unreachable: a closed port is UNAVAILABLE and retryable, naming the runtime", async () => {
    const port = await freePort();
    const runtime = createHttpRuntime({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 5_000 });
    const e = await failure(runtime.create(SPEC));
    expect(e.code).toBe(Code.Unavailable);
    expect(isRetryableRuntimeError(e)).toBe(true);
    expect(e.rawMessage).toContain(`runtime http://127.0.0.1:${port} Create: unreachable`);
  });

  it("5xx without a Connect body: UNAVAILABLE, retryable, with the backend's Retry-After", async () => {
    const { runtime } = scripted(() => new Response("upstream down", { status: 503, headers: { "content-type": "text/plain", "retry-after": "7" } }));
    const e = await failure(runtime.status(INC));
    expect(e.code).toBe(Code.Unavailable);
    expect(isRetryableRuntimeError(e)).toBe(true);
    expect(retryAfterMsOf(e)).toBe(7_000);
  });

  it("a Connect INTERNAL from the backend (HTTP 500) is retryable", async () => {
    const { runtime } = scripted(() => connectError(500, "internal", "spawn failed"));
    const e = await failure(runtime.create(SPEC));
    expect(isRetryableRuntimeError(e)).toBe(true);
    expect(e.rawMessage).toContain("spawn failed");
  });

  it("the per-call timeout is UNAVAILABLE and retryable", async () => {
    const slow = createHttpRuntime({
      baseUrl: BASE,
      timeoutMs: 50,
      fetch: (_i, init) => new Promise((_r, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason))),
    });
    const e = await failure(slow.status(INC));
    expect(e.code).toBe(Code.Unavailable);
    expect(e.cause).toBeInstanceOf(ConnectError);
    expect((e.cause as ConnectError).code).toBe(Code.DeadlineExceeded);
  });

  it("terminal backend codes pass through: NOT_FOUND, INVALID_ARGUMENT, FAILED_PRECONDITION", async () => {
    for (const [code, expected] of [
      ["not_found", Code.NotFound],
      ["invalid_argument", Code.InvalidArgument],
      ["failed_precondition", Code.FailedPrecondition],
    ] as const) {
      const { runtime } = scripted(() => connectError(code === "not_found" ? 404 : 400, code, `why ${code}`));
      const e = await failure(runtime.describe("x"));
      expect(e.code).toBe(expected);
      expect(isRetryableRuntimeError(e)).toBe(false);
      expect(e.rawMessage).toContain(`why ${code}`);
    }
  });

  it("a redirect is not followed: FAILED_PRECONDITION, terminal", async () => {
    const { runtime, seen } = scripted(() => new Response(null, { status: 307, headers: { location: "http://elsewhere/" } }));
    const e = await failure(runtime.create(SPEC));
    expect(e.code).toBe(Code.FailedPrecondition);
    expect(e.rawMessage).toContain("redirect");
    expect(seen.map((x) => [x.path, x.redirect])).toEqual([["/agentsessions.edge.v1.Runtime/Create", "manual"]]);
  });

  it("a URL that is not a Runtime service (plain 404) is UNIMPLEMENTED, terminal, with a hint", async () => {
    const { runtime } = scripted(() => new Response("not here", { status: 404, headers: { "content-type": "text/plain" } }));
    const e = await failure(runtime.stop(INC));
    expect(e.code).toBe(Code.Unimplemented);
    expect(e.rawMessage).toContain("agentsessions.edge.v1.Runtime");
  });
});

describe("http runtime: answers", () => {
  it("create: an incarnation for another session is refused as INTERNAL, terminal", async () => {
    const { runtime } = scripted(() => proto(toBinary(IncarnationSchema, create(IncarnationSchema, { id: "sess-other", worker: "w/2", runtime: "pod" }))));
    const e = await failure(runtime.create(SPEC));
    expect(e.code).toBe(Code.Internal);
    expect(isRetryableRuntimeError(e)).toBe(false);
    expect(e.rawMessage).toContain("bad answer");
  });

  it("status: UNSPECIFIED is refused as a bad answer", async () => {
    const { runtime } = scripted(() => proto(toBinary(StatusResponseSchema, create(StatusResponseSchema, {}))));
    const e = await failure(runtime.status(INC));
    expect(e.code).toBe(Code.Internal);
  });

  it("capabilities(): all false until fetched; describe fetches them once", async () => {
    const { runtime, seen } = scripted((path) =>
      path.endsWith("/Capabilities")
        ? proto(toBinary(RuntimeCapabilitiesSchema, create(RuntimeCapabilitiesSchema, { memorySnapshot: true })))
        : proto(toBinary(HarnessDescriptorSchema, create(HarnessDescriptorSchema, { id: "counter" }))),
    );
    expect(runtime.capabilities().memorySnapshot).toBe(false);
    expect((await runtime.describe("counter")).id).toBe("counter");
    expect(runtime.capabilities().memorySnapshot).toBe(true);
    await runtime.describe("counter");
    expect(seen.filter((s) => s.path.endsWith("/Capabilities"))).toHaveLength(1);
  });

  it("create and snapshot: the spec, the dialback, the kind and the fence travel as given", async () => {
    const { runtime, seen } = scripted((path) =>
      path.endsWith("/Create")
        ? proto(toBinary(IncarnationSchema, create(IncarnationSchema, { id: "sess-1", worker: "w/1", runtime: "pod" })))
        : proto(toBinary(SnapshotRefSchema, create(SnapshotRefSchema, { local: "sess-1" }))),
    );
    const inc = await runtime.create(SPEC);
    expect(inc).toEqual({ id: "sess-1", worker: "w/1", address: "", runtime: "pod", fence: 0n });
    const sent = fromBinary(CreateRequestSchema, seen[0]!.body);
    expect(sent.spec).toMatchObject({ sessionUid: "sess-1", harness: "echo2" });
    expect(sent.dialback).toMatchObject(SPEC.dialback);
    await runtime.snapshot(INC, "EXTERNAL");
    const snap = fromBinary(SnapshotRequestSchema, seen[1]!.body);
    expect(snap.kind).toBe(SnapshotKind.EXTERNAL);
    expect(snap.incarnation).toMatchObject({ id: "sess-1", fence: 3n });
  });
});

describe("http runtime: token and ForkMany", () => {
  const REF = create(SnapshotRefSchema, { local: "sess-1", externalUri: "substrate://snap/1", memory: true });
  const CHILDREN = [
    { sessionUid: "sess-2", dialback: { tunnelUrl: "http://host/harness/v1/connect?name=echo2", token: "ot_two" } },
    { sessionUid: "sess-3", dialback: { tunnelUrl: "http://host/harness/v1/connect?name=echo2", token: "ot_three" } },
  ];
  const placed = (...ids: string[]) =>
    proto(toBinary(ForkManyResponseSchema, create(ForkManyResponseSchema, { incarnations: ids.map((id) => ({ id, worker: "w", runtime: "substrate" })) })));

  it("token: every call carries Authorization: Bearer <token>; without one, no header", async () => {
    const withToken = scripted(() => proto(toBinary(StatusResponseSchema, create(StatusResponseSchema, { state: 2 }))), "rt_secret_secret_secret");
    await withToken.runtime.status(INC);
    await withToken.runtime.refreshCapabilities().catch(() => undefined);
    expect(withToken.seen.map((x) => x.authorization)).toEqual(["Bearer rt_secret_secret_secret", "Bearer rt_secret_secret_secret"]);
    const without = scripted(() => proto(toBinary(StatusResponseSchema, create(StatusResponseSchema, { state: 2 }))));
    await without.runtime.status(INC);
    expect(without.seen[0]!.authorization).toBeNull();
  });

  it("forkMany: sends the ref, the parent's spec and each child's own dialback, in order", async () => {
    const { runtime, seen } = scripted(() => placed("sess-2", "sess-3"));
    const incs = await runtime.forkMany(REF, CHILDREN, { sessionUid: "sess-1", harness: "counter" });
    expect(incs.map((i) => i.id)).toEqual(["sess-2", "sess-3"]);
    expect(seen[0]!.path).toBe("/agentsessions.edge.v1.Runtime/ForkMany");
    const sent = fromBinary(ForkManyRequestSchema, seen[0]!.body);
    expect(sent.ref).toMatchObject({ local: "sess-1", externalUri: "substrate://snap/1", memory: true });
    expect(sent.spec).toMatchObject({ sessionUid: "sess-1", harness: "counter" });
    expect(sent.children.map((c) => [c.sessionUid, c.dialback?.token])).toEqual([
      ["sess-2", "ot_two"],
      ["sess-3", "ot_three"],
    ]);
  });

  it("forkMany: an answer that does not place exactly the children asked for is a bad answer (INTERNAL)", async () => {
    for (const answer of [placed("sess-2"), placed("sess-3", "sess-2")]) {
      const { runtime } = scripted(() => answer);
      const e = await failure(runtime.forkMany(REF, CHILDREN, { sessionUid: "sess-1", harness: "counter" }));
      expect(e.code).toBe(Code.Internal);
      expect(e.rawMessage).toContain("bad answer");
    }
  });
});
