/**
 * Disconnects and shutdown (docs/tunnel.md "Disconnects"): a dropped socket fails its streams and
 * the SDK reconnects with backoff; close() says Goodbye and lets open streams finish first.
 */
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { assistantText, userText } from "../../../proto/messages.js";
import { echoHarness } from "../../../runtimes/builtin/echo.js";
import { serve, type ServeStatus } from "../../../sdk/harness/index.js";
import { startFakeHost } from "./fake-host.js";
import { deferred, harnessOf, serveOn } from "./support.js";

const j = (e: Event) => toJson(EventSchema, e) as Record<string, unknown>;
const idOf = (e: Event) => (e.body.case === "model" ? e.body.value.id : "");

describe("reconnect", () => {
  it("drop: fails the open stream with unavailable, reconnects with a fresh Hello, serves new streams", async () => {
    const failed = deferred<unknown>();
    const h = harnessOf(async (start, sink) => {
      if (start.executionId === "e-old") failed.resolve(await sink.model({ model: "echo", messages: [userText("x")] }).catch((e: unknown) => e));
      else await echoHarness.run(start, sink);
    });
    const { host, conn, serving, statuses } = await serveOn(h);
    conn.start("s1", {}, undefined, "e-old");
    await conn.event("s1");
    conn.drop();
    const err = await failed.promise;
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);

    const again = await host.nextConnection();
    expect((await again.hello()).name).toBe("test-harness");
    await expect.poll(() => serving.connectionId).toBe(again.id);
    const drop = statuses.find((s) => s.state === "disconnected");
    expect(drop).toMatchObject({ state: "disconnected", reason: expect.stringMatching(/1006/) });
    expect((drop as { retryInMs: number }).retryInMs).toBeLessThanOrEqual(20);
    expect(statuses.filter((s) => s.state === "connected").map((s) => (s as { connectionId: string }).connectionId)).toEqual([conn.id, again.id]);

    again.start("s2", { inputs: [userText("hi")] });
    const call = await again.event("s2");
    again.frame("s2", { frame: { case: "model", value: { message: assistantText("echo:hi"), modelCallId: idOf(call) } } });
    expect(j(await again.event("s2"))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });
  });

  it("unreachable host: keeps retrying with growing delays until close(), which rejects connected", async () => {
    const gone = await startFakeHost();
    await gone.close();
    const statuses: ServeStatus[] = [];
    const serving = serve({
      url: gone.url,
      name: "test-harness",
      harness: echoHarness,
      backoff: { initialMs: 10, maxMs: 40 },
      onStatus: (s) => statuses.push(s),
    });
    await expect.poll(() => statuses.filter((s) => s.state === "disconnected").length).toBeGreaterThanOrEqual(4);
    const delays = statuses.flatMap((s) => (s.state === "disconnected" ? [s.retryInMs] : []));
    expect(delays.every((d) => d >= 5 && d <= 40)).toBe(true);
    expect(statuses.find((s) => s.state === "disconnected")).toMatchObject({ reason: expect.stringMatching(/ECONNREFUSED/) });
    await serving.close();
    await expect(serving.connected).rejects.toMatchObject({ code: Code.Canceled });
    expect(statuses.at(-1)).toEqual({ state: "closed" });
  });

  it("refusal: a 503 is retried, not terminal", async () => {
    const host = await startFakeHost({ refuse: { status: 503, code: "unavailable", message: "starting up" } });
    const statuses: ServeStatus[] = [];
    const serving = serve({
      url: host.url,
      name: "test-harness",
      harness: echoHarness,
      backoff: { initialMs: 10, maxMs: 20 },
      onStatus: (s) => statuses.push(s),
    });
    await expect.poll(() => host.requests.length).toBeGreaterThanOrEqual(2);
    expect(statuses.find((s) => s.state === "disconnected")).toMatchObject({ reason: "the host answered HTTP 503: starting up" });
    await serving.close();
    await host.close();
  });

  it("close: Goodbye first, an open stream finishes and sends END, a new Start is refused, then the socket closes", async () => {
    const hold = deferred();
    const started = deferred();
    const { conn, serving } = await serveOn(
      harnessOf(() => (started.resolve(), hold.promise)),
      { drainMs: 5_000 },
    );
    conn.start("s1");
    await started.promise;
    const closing = serving.close();
    await conn.goodbye();
    conn.start("s2");
    expect(j(await conn.event("s2"))).toMatchObject({
      kind: "EVENT_END",
      end: { state: "FAILED", error: { description: expect.stringMatching(/shutting down/) } },
    });
    hold.resolve();
    expect(j(await conn.event("s1"))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });
    await closing;
    expect((await conn.closed).code).toBe(1000);
  });

  it("close: a stream still open after drainMs is abandoned without END (left for Resume)", async () => {
    const aborted = deferred<unknown>();
    const started = deferred();
    const { conn, serving } = await serveOn(
      harnessOf((start) => {
        started.resolve();
        return new Promise(() => start.signal.addEventListener("abort", () => aborted.resolve(start.signal.reason)));
      }),
      { drainMs: 100 },
    );
    conn.start("s1");
    await started.promise;
    await serving.close();
    expect(await aborted.promise).toMatchObject({ code: Code.Unavailable });
    await conn.silent("s1", 100);
  });
});
