/**
 * The host ending a stream early (docs/tunnel.md): StreamClose stops the execution and nothing more
 * is sent on it; a Cancel frame ends it CANCELED; a TunnelError naming it acts as a close.
 */
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventSchema, type Event } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { userText } from "../../../proto/messages.js";
import type { HarnessStart } from "../../../sdk/harness/index.js";
import { deferred, harnessOf, serveOn } from "./support.js";

const j = (e: Event) => toJson(EventSchema, e) as Record<string, unknown>;

/** A harness that makes one model call and reports how it ended, and what a later call did. */
function pendingModelHarness() {
  const ended = deferred<{ callError: unknown; laterError: unknown; start: HarnessStart }>();
  const h = harnessOf(async (start, sink) => {
    const callError = await sink.model({ model: "echo", messages: [userText("x")] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const laterError = await sink.output("late").then(
      () => undefined,
      (e: unknown) => e,
    );
    ended.resolve({ callError, laterError, start });
  });
  return { h, ended: ended.promise };
}

describe("stream close", () => {
  it("StreamClose: aborts the run's signal, rejects the pending and later sink calls, sends nothing", async () => {
    const { h, ended } = pendingModelHarness();
    const { conn } = await serveOn(h);
    conn.start("s1");
    await conn.event("s1");
    conn.closeStream("s1", "superseded");
    const r = await ended;
    expect(r.start.signal.aborted).toBe(true);
    expect(r.callError).toBeInstanceOf(ConnectError);
    expect((r.callError as ConnectError).code).toBe(Code.Canceled);
    expect((r.callError as ConnectError).rawMessage).toBe("the host closed the stream: superseded");
    expect(r.laterError).toBe(r.callError);
    await conn.silent("s1", 300);
  });

  it("TunnelError naming a stream: closes it like StreamClose", async () => {
    const { h, ended } = pendingModelHarness();
    const { conn } = await serveOn(h);
    conn.start("s1");
    await conn.event("s1");
    conn.send({ message: { case: "error", value: { code: Code.NotFound, message: "unknown stream", stream: "s1" } } });
    expect(String((await ended).callError)).toMatch(/unknown stream/);
    await conn.silent("s1", 300);
  });

  it("Cancel frame: aborts the run and ends the stream CANCELED", async () => {
    const { h, ended } = pendingModelHarness();
    const { conn } = await serveOn(h);
    conn.start("s1");
    await conn.event("s1");
    conn.frame("s1", { frame: { case: "cancel", value: { reason: "USER" } } });
    expect(j(await conn.event("s1"))).toMatchObject({
      kind: "EVENT_END",
      end: { state: "CANCELED", error: { description: "the host canceled the execution (USER)" } },
    });
    expect((await ended).start.signal.aborted).toBe(true);
    await conn.silent("s1", 300);
  });

  it("StreamClose: other streams on the connection carry on", async () => {
    const { h } = pendingModelHarness();
    const { conn } = await serveOn(h);
    conn.start("a");
    conn.start("b");
    await conn.event("a");
    const call = await conn.event("b");
    conn.closeStream("a");
    conn.frame("b", { frame: { case: "model", value: { modelCallId: call.body.case === "model" ? call.body.value.id : "" } } });
    expect(j(await conn.event("b"))).toMatchObject({ kind: "EVENT_OUTPUT" });
    expect(j(await conn.event("b"))).toMatchObject({ kind: "EVENT_END", end: { state: "COMPLETED" } });
    await conn.silent("a", 200);
  });
});
