import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import { consoleMethodOf, writeLogLine } from "../../../objects/log-line.js";
import { logRpc } from "../../../worker/request-log.js";
import { captureConsole } from "../support/console-lines.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("log lines", () => {
  it("a structured line goes out through the console method of its level, as one JSON object", () => {
    const lines = captureConsole();
    for (const level of ["error", "warn", "info", "debug"]) writeLogLine({ level, msg: "m" });
    expect(lines.map((l) => [l.method, (JSON.parse(l.text) as { level: string }).level])).toEqual([
      ["error", "error"],
      ["warn", "warn"],
      ["info", "info"],
      ["debug", "debug"],
    ]);
  });

  it("a line without a known level is written as info, never dropped", () => {
    expect(consoleMethodOf(undefined)).toBe("info");
    expect(consoleMethodOf("fatal")).toBe("info");
    const lines = captureConsole();
    writeLogLine({ msg: "no level" });
    expect(lines).toEqual([{ method: "info", text: '{"msg":"no level"}' }]);
  });

  it("the request line of a server fault is written with console.error, a caller's error with console.info", () => {
    const lines = captureConsole();
    logRpc({ requestId: "r", tenant: "t", session: "", operation: "GetSession", code: Code.Internal, durationMs: 1 });
    logRpc({ requestId: "r", tenant: "t", session: "", operation: "GetSession", code: Code.NotFound, durationMs: 1 });
    logRpc({ requestId: "r", tenant: "t", session: "", operation: "GetSession", code: undefined, durationMs: 1 });
    expect(lines.map((l) => [l.method, (JSON.parse(l.text) as { outcome: string }).outcome])).toEqual([
      ["error", "Internal"],
      ["info", "NotFound"],
      ["info", "ok"],
    ]);
  });
});
