/**
 * Model routing: which model a request runs on, and what is refused before anything is recorded.
 */
import { describe, expect, it } from "vitest";
import { assistantText, userText } from "../../../proto/messages.js";
import { createModelInvoker, type ModelProvider } from "../../../objects/controller/models.js";
import { liveTurn, modelHarness, newLog } from "../support/controller-fixture.js";

const provider: ModelProvider = { complete: async () => ({ message: assistantText("from provider") }) };

describe("createModelInvoker", () => {
  it("resolve: the harness's model wins, then the session's, then MODEL_DEFAULT", () => {
    const m = createModelInvoker({ sessionModel: "s", defaultModel: "d", provider });
    expect(m.resolve("h")).toBe("h");
    expect(m.resolve("")).toBe("s");
    expect(createModelInvoker({ defaultModel: "d", provider }).resolve("")).toBe("d");
  });

  it("resolve: without a provider an unnamed model is echo; with one it is a configuration error", () => {
    expect(createModelInvoker().resolve("")).toBe("echo");
    const m = createModelInvoker({ provider });
    expect(m.resolve("")).toBe("");
    expect(m.serves("")).toBe(false);
  });

  it("invoke: echo answers locally; other models go to the provider; every call is counted", async () => {
    const m = createModelInvoker({ provider });
    const signal = new AbortController().signal;
    expect((await m.invoke({ model: "echo", messages: [userText("x")] }, { signal })).message).toEqual(assistantText("echo:x"));
    expect((await m.invoke({ model: "gpt", messages: [] }, { signal })).message).toEqual(assistantText("from provider"));
    expect(m.calls).toBe(2);
    await expect(createModelInvoker().invoke({ model: "gpt", messages: [] }, { signal })).rejects.toThrow(/no model provider/);
  });

  it("live sink: an unnamed model with a provider configured fails before MODEL_CALL is recorded", async () => {
    const fx = newLog();
    const h = {
      ...modelHarness(),
      run: async (_s: unknown, sink: { model: (r: object) => Promise<unknown> }) => void (await sink.model({ model: "", messages: [] })),
    };
    const out = await liveTurn(fx, h as never, createModelInvoker({ provider }), ["hi"]);
    expect(out).toMatchObject({ kind: "failed" });
    expect(fx.kinds()).toEqual(["EXECUTION_START", "INPUT", "ERROR"]);
  });
});
