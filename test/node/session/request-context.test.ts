/**
 * Phase timing on the request context (objects/request-context.ts; docs/observability.md): a
 * timed call writes one `phase` line with the request id, its duration and outcome, and adds to
 * the request's totals; outside a request nothing is logged. End to end through the session
 * core: a turn's tool calls (objects/tools/executor.ts, against a real HTTP stand-in executor)
 * and model calls (objects/models/timed.ts) write phase lines that carry the Exec's request id
 * and nothing of the call's arguments.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createModelInvoker } from "../../../objects/controller/models.js";
import { timedProvider } from "../../../objects/models/timed.js";
import { phaseTotals, timePhase, withRequestId, type PhaseLine } from "../../../objects/request-context.js";
import { createToolExecutor } from "../../../objects/tools/executor.js";
import { assistantText, userText } from "../../../proto/messages.js";
import { createChatHarness } from "../../../runtimes/builtin/chat.js";
import { toolsHarness } from "../../../runtimes/builtin/testing.js";
import { captureConsole, structured } from "../support/console-lines.js";
import { startFakeExecutor } from "../support/fake-executor.js";
import { createSession, drain, execReq, setup } from "../support/session-fixture.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("timePhase", () => {
  it("timePhase: logs the phase with the request id, duration and outcome, and adds to the totals", async () => {
    const lines: PhaseLine[] = [];
    let t = 1000;
    const o = { log: (l: PhaseLine) => void lines.push(l), now: () => t };
    const totals = await withRequestId("req-1", async () => {
      await timePhase("model", async () => void (t += 250), o);
      await timePhase("model", async () => void (t += 50), o);
      await expect(timePhase("tool", () => Promise.reject(new Error("down")), o)).rejects.toThrow("down");
      return phaseTotals();
    });
    expect(lines).toEqual([
      { level: "info", msg: "phase", request_id: "req-1", phase: "model", duration_ms: 250, outcome: "ok" },
      { level: "info", msg: "phase", request_id: "req-1", phase: "model", duration_ms: 50, outcome: "ok" },
      { level: "info", msg: "phase", request_id: "req-1", phase: "tool", duration_ms: 0, outcome: "error" },
    ]);
    expect(totals).toEqual({ model_ms: 300, model_calls: 2, tool_ms: 0, tool_calls: 1 });
  });

  it("timePhase: outside a request it only runs the call; interleaved requests keep their own totals", async () => {
    const lines: PhaseLine[] = [];
    expect(await timePhase("tool", async () => 7, { log: (l) => void lines.push(l) })).toBe(7);
    expect(lines).toEqual([]);
    expect(phaseTotals()).toEqual({});
    const [a, b] = await Promise.all([
      withRequestId("a", async () => {
        await timePhase("tool", async () => undefined, { log: () => undefined });
        return phaseTotals();
      }),
      withRequestId("b", async () => phaseTotals()),
    ]);
    expect(a).toMatchObject({ tool_calls: 1 });
    expect(b).toEqual({});
  });
});

describe("phases of a turn", () => {
  it("exec: each tool call writes a tool phase line with the Exec's request id and no arguments", async () => {
    const executor = await startFakeExecutor();
    try {
      const captured = captureConsole();
      const fx = setup({ tools: toolsHarness }, undefined, { tools: createToolExecutor({ executor: { url: executor.url } }) });
      const uid = await createSession(fx.host, "tools");
      const config = new TextEncoder().encode(
        JSON.stringify({
          calls: [
            { id: "c1", tool: "charge", args: { secret_arg: "do-not-log" } },
            { id: "c2", tool: "refund" },
          ],
        }),
      );
      const done = await drain(withRequestId("req-turn", () => fx.host.exec(execReq({ session: uid, inputs: [userText("go")], config }))));
      expect(done.failure).toBeUndefined();
      const lines = structured(captured);
      const phases = lines.filter((l) => l.msg === "phase");
      expect(phases.map((l) => [l.request_id, l.phase, l.outcome])).toEqual([
        ["req-turn", "tool", "ok"],
        ["req-turn", "tool", "ok"],
      ]);
      expect(phases.every((l) => typeof l.duration_ms === "number" && (l.duration_ms as number) >= 0)).toBe(true);
      expect(JSON.stringify(lines)).not.toContain("do-not-log");
    } finally {
      await executor.close();
    }
  });

  it("exec: each provider call writes a model phase line; the echo model, which makes no call, writes none", async () => {
    const captured = captureConsole();
    const provider = timedProvider({ complete: async () => ({ message: assistantText("hi there") }) });
    const fx = setup({ chat: createChatHarness() }, (sessionModel) => createModelInvoker({ sessionModel, defaultModel: "m", provider }));
    const chat = await createSession(fx.host, "chat");
    expect((await drain(withRequestId("req-chat", () => fx.host.exec(execReq({ session: chat, inputs: [userText("hello")] }))))).failure).toBeUndefined();
    // One session object per host: the echo session gets its own.
    const other = setup({}, (sessionModel) => createModelInvoker({ sessionModel, provider }));
    const echo = await createSession(other.host);
    expect((await drain(withRequestId("req-echo", () => other.host.exec(execReq({ session: echo, inputs: [userText("hello")] }))))).failure).toBeUndefined();
    expect(
      structured(captured)
        .filter((l) => l.msg === "phase")
        .map((l) => [l.request_id, l.phase]),
    ).toEqual([["req-chat", "model"]]);
  });
});
