import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import { configureLogLevel, consoleMethodOf, logsAt, setLogLevel, writeLogLine, writeLogText } from "../../../objects/log-line.js";
import { logRpc } from "../../../worker/request-log.js";
import { captureConsole } from "../support/console-lines.js";

afterEach(() => {
  vi.restoreAllMocks();
  setLogLevel(undefined);
});

describe("log lines", () => {
  it("a structured line goes out through the console method of its level, as one JSON object", () => {
    setLogLevel("debug"); // info, the default, leaves debug lines out (below)
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

  it("LOG_LEVEL is the least level written: lines below it are dropped, lines at or above it kept", () => {
    const levels = ["debug", "info", "warn", "error"];
    const written: Record<string, string[]> = {};
    for (const least of levels) {
      expect(setLogLevel(least)).toBe(true);
      const lines = captureConsole();
      for (const level of levels) writeLogLine({ level, msg: "m" });
      writeLogText("info", '{"msg":"text"}');
      written[least] = lines.map((l) => l.method);
      vi.restoreAllMocks();
    }
    expect(written).toEqual({
      debug: ["debug", "info", "warn", "error", "info"],
      info: ["info", "warn", "error", "info"],
      warn: ["warn", "error"],
      error: ["error"],
    });
  });

  it("LOG_LEVEL takes any case and spaces; unset or empty is info", () => {
    expect(setLogLevel(" WARN ")).toBe(true);
    expect([logsAt("info"), logsAt("warn")]).toEqual([false, true]);
    for (const unset of [undefined, "", "  "]) {
      expect(setLogLevel(unset)).toBe(true);
      expect([logsAt("debug"), logsAt("info")]).toEqual([false, true]);
    }
  });

  it("a LOG_LEVEL that is not a level leaves info in force and is named in one warn line per isolate", () => {
    setLogLevel("error");
    const lines = captureConsole();
    configureLogLevel({ LOG_LEVEL: "verbose" });
    configureLogLevel({ LOG_LEVEL: "verbose" });
    expect([logsAt("debug"), logsAt("info")]).toEqual([false, true]);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.method).toBe("warn");
    expect(JSON.parse(lines[0]!.text)).toMatchObject({ level: "warn", msg: "config", ignored: ["LOG_LEVEL"] });
    expect(lines[0]!.text).not.toContain("verbose");
    configureLogLevel({ LOG_LEVEL: "warn" });
    expect(logsAt("info")).toBe(false);
  });

  it("at LOG_LEVEL=warn the request line of a server fault is still written, a successful call's is not", () => {
    setLogLevel("warn");
    const lines = captureConsole();
    logRpc({ requestId: "r", tenant: "t", session: "", operation: "GetSession", code: undefined, durationMs: 1 });
    logRpc({ requestId: "r", tenant: "t", session: "", operation: "GetSession", code: Code.NotFound, durationMs: 1 });
    logRpc({ requestId: "r", tenant: "t", session: "", operation: "GetSession", code: Code.Unavailable, durationMs: 1 });
    expect(lines.map((l) => [l.method, (JSON.parse(l.text) as { outcome: string }).outcome])).toEqual([["error", "Unavailable"]]);
  });
});
