/**
 * worker/faults.ts through connect-es's in-memory router transport: an implementation that throws
 * a plain Error (as a Durable Object stub does for a storage fault) reaches the caller as INTERNAL
 * "internal error", unary and mid-stream; a ConnectError passes unchanged; the fault line names the
 * error's kind and location and never its message.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import { EventKind, LogRecordSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Sessions } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { classifyFaults } from "../../../worker/faults.js";
import { captureConsole, texts } from "../support/console-lines.js";

const SECRET = "sk-live-do-not-log";

function clientThatThrows(fault: () => never) {
  const transport = createRouterTransport(
    (router) =>
      router.service(Sessions, {
        getSession: async () => fault(),
        async *replay() {
          yield create(LogRecordSchema, { seq: 1n, event: { kind: EventKind.EVENT_INPUT } });
          fault();
        },
      }),
    { router: { interceptors: [classifyFaults] } },
  );
  return createClient(Sessions, transport);
}

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e) => ConnectError.from(e),
  );

afterEach(() => {
  vi.restoreAllMocks();
});

describe("classifyFaults", () => {
  it('a plain Error is INTERNAL "internal error", unary and mid-stream, and its message is not logged', async () => {
    const captured = captureConsole();
    const client = clientThatThrows(() => {
      throw new TypeError(`SQLITE_ERROR: no such table: events (value ${SECRET})`);
    });
    const unary = await errorOf(client.getSession({ uid: "x" }));
    expect(unary?.code).toBe(Code.Internal);
    expect(unary?.rawMessage).toBe("internal error");

    const seen: bigint[] = [];
    const streamed = await errorOf(
      (async () => {
        for await (const r of client.replay({ session: "x" })) seen.push(r.seq);
      })(),
    );
    expect(seen).toEqual([1n]);
    expect(streamed?.code).toBe(Code.Internal);
    expect(streamed?.rawMessage).toBe("internal error");

    const lines = texts(captured);
    // A fault is an error line, written with console.error (objects/log-line.ts).
    expect(captured.filter((l) => l.text.includes('"msg":"fault"')).map((l) => l.method)).toEqual(["error", "error"]);
    const faults = lines.map((l) => JSON.parse(l) as Record<string, string>).filter((l) => l.msg === "fault");
    expect(faults.map((f) => [f.operation, f.fault, f.level])).toEqual([
      ["GetSession", "TypeError", "error"],
      ["Replay", "TypeError", "error"],
    ]);
    expect(faults[0]!.at).toMatch(/faults\.test\.ts/);
    expect(lines.join("\n")).not.toContain(SECRET);
  });

  it("a ConnectError passes through unchanged and logs no fault", async () => {
    const captured = captureConsole();
    const client = clientThatThrows(() => {
      throw new ConnectError("session sess-1 not found", Code.NotFound);
    });
    const err = await errorOf(client.getSession({ uid: "x" }));
    expect(err?.code).toBe(Code.NotFound);
    expect(err?.rawMessage).toBe("session sess-1 not found");
    expect(captured).toEqual([]);
  });
});
