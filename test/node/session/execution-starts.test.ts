/**
 * The controller's promises through the session host, in process on sql.js (checklist §8.7 #37,
 * checklist §8.8 #45, checklist §8.9 #50, checklist §8.11 #59): CanPlace's whole truth table, a fork child's model-cut recovery
 * counted at the provider, config kept out of operational logs, and the execution ids the host
 * mints matching the Starts harnesses see, live and on replay.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it, vi } from "vitest";
import { EventKind, EventSchema } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState, RuntimeCapabilitiesSchema, SessionSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { mintSessionUid } from "../../../proto/ids.js";
import { textOf, userText } from "../../../proto/messages.js";
import { createBuiltinRuntime } from "../../../runtimes/builtin/runtime.js";
import type { Harness } from "../../../runtimes/harness-spi.js";
import type { Runtime } from "../../../runtimes/runtime-spi.js";
import { createModelInvoker, type ModelInvoker } from "../../../objects/controller/models.js";
import type { SessionHost } from "../../../objects/session/facade.js";
import { counterScript, scriptedModels } from "../support/controller-fixture.js";
import { createSession, descriptor, drain, execReq, setup } from "../support/session-fixture.js";

function journal(host: SessionHost) {
  const r = host.read(1n, 0n, 10_000);
  if (!r.ok) throw new Error(r.message);
  return r.value;
}
const kindsOf = (host: SessionHost) => journal(host).map((r) => EventKind[fromBinary(EventSchema, r.event).kind].replace(/^EVENT_/, ""));
const lastSeq = (host: SessionHost) => {
  const s = host.get();
  if (!s.ok) throw new Error(s.message);
  return s.value.lastSeq;
};

/** The built-in echo model behind every session of a test, counting every provider call. */
function countedEcho() {
  const calls = { n: 0 };
  const models = (sessionModel: string): ModelInvoker => {
    const inner = createModelInvoker({ sessionModel });
    return {
      resolve: (m) => inner.resolve(m),
      serves: (m) => inner.serves(m),
      invoke: (req, o) => (calls.n++, inner.invoke(req, o)),
      get calls() {
        return inner.calls;
      },
    };
  };
  return { models, calls };
}

/** Forks `parent` at `atSeq` into a fresh child the way worker/fork.ts does (begin, seed, finish). */
function forkChild(parent: SessionHost, atSeq: bigint, models: (m: string) => ModelInvoker) {
  return (async () => {
    const src = await parent.forkSource(atSeq);
    if (!src.ok) throw new Error(src.message);
    const statics = fromBinary(SessionSchema, src.value.statics);
    const child = setup({}, models);
    const uid = mintSessionUid();
    const p = parent.get();
    if (!p.ok) throw new Error(p.message);
    const childStatics = create(SessionSchema, {
      harness: statics.harness,
      metadata: { project: "default", name: "c" },
      parentUid: p.value.metadata!.uid,
      forkSeq: src.value.atSeq,
    });
    expect(child.host.forkBegin("default", uid, childStatics).ok).toBe(true);
    expect(child.host.forkSeed(journal(parent).filter((r) => r.seq <= src.value.atSeq)).ok).toBe(true);
    const sealed = child.host.forkFinish(src.value.atSeq, src.value.states);
    if (!sealed.ok) throw new Error(sealed.message);
    return child;
  })();
}

afterEach(() => vi.restoreAllMocks());

describe("the controller through the session host", () => {
  it("CanPlace: stateless on a runtime without memory snapshots places; a memory harness there is refused; a memory harness on a memory-capable runtime places (checklist §8.7 #37)", async () => {
    const memory: Harness = { describe: () => descriptor("counter", Resumability.REQUIRES_MEMORY_SNAPSHOT), run: (_s, sink) => sink.output("kept in memory") };
    const plain = setup({ memory });
    expect(createBuiltinRuntime().capabilities().memorySnapshot).toBe(false);
    await createSession(plain.host, "echo");
    expect((await drain(plain.host.exec(execReq({ inputs: [userText("x")] })))).failure).toBeUndefined();
    expect(lastSeq(plain.host)).toBe(5n);

    const refused = setup({ memory });
    await createSession(refused.host, "memory");
    expect((await drain(refused.host.exec(execReq({ inputs: [userText("x")] })))).failure).toMatchObject({ reason: "unplaceable" });
    expect(lastSeq(refused.host)).toBe(0n);

    // No runtime in this repo takes memory snapshots; the rule itself is what is checked here.
    const builtin = createBuiltinRuntime();
    const capable: Runtime = { ...builtin, name: "memory-capable", capabilities: () => create(RuntimeCapabilitiesSchema, { memorySnapshot: true }) };
    const placed = setup({ memory }, undefined, { runtime: capable });
    await createSession(placed.host, "memory");
    const turn = await drain(placed.host.exec(execReq({ inputs: [userText("x")] })));
    expect(turn.failure).toBeUndefined();
    expect(kindsOf(placed.host)).toEqual(["EXECUTION_START", "INPUT", "OUTPUT", "END"]);
    expect(placed.logs.filter((l) => l.msg === "placement")).toMatchObject([{ decision: "admitted", harness_id: "counter", runtime: "memory-capable" }]);
  });

  it("a child forked at a MODEL_CALL: its Resume calls the echo model exactly once and completes; the parent is untouched and makes no call (checklist §8.8 #45)", async () => {
    const echo = countedEcho();
    const p = setup({}, echo.models);
    await createSession(p.host);
    await drain(p.host.exec(execReq({ inputs: [userText("one")] })));
    await drain(p.host.exec(execReq({ inputs: [userText("two")] })));
    expect(kindsOf(p.host)[7]).toBe("MODEL_CALL");
    expect(echo.calls.n).toBe(2);
    const parentBefore = journal(p.host);

    const c = await forkChild(p.host, 8n, echo.models);
    expect(await c.host.audit(true)).toMatchObject({ ok: true, value: { chain: { ok: true }, replay: { ok: true, outputs: ["echo:one"] } } });
    expect(echo.calls.n).toBe(2);
    expect(await c.host.resume()).toMatchObject({ ok: true, value: { lastSeq: 12n, computeState: ComputeState.COMPUTE_LIVE } });
    expect(echo.calls.n).toBe(3);
    expect(kindsOf(c.host).slice(8)).toEqual(["LIFECYCLE", "OUTPUT", "END", "LIFECYCLE"]);
    expect(await c.host.audit(true)).toMatchObject({
      ok: true,
      value: { chain: { ok: true }, replay: { ok: true, outputs: ["echo:one", "echo:two"], modelCalls: 0 } },
    });

    // The parent: same records, and nothing to recover (no call on its behalf).
    expect(journal(p.host)).toEqual(parentBefore);
    expect((await p.host.resume()).ok).toBe(true);
    expect(echo.calls.n).toBe(3);
    expect(journal(p.host).slice(0, parentBefore.length)).toEqual(parentBefore);
    expect(kindsOf(p.host).slice(parentBefore.length)).toEqual(["LIFECYCLE"]);
  });

  it("config bytes never appear in operational logs: Exec, a failed turn, Resume, Suspend and replay (checklist §8.9 #50)", async () => {
    const secret = "cfg-7f3a9c-do-not-log";
    const bytes = new TextEncoder().encode(JSON.stringify({ system_prompt: secret }));
    const forms = [secret, Buffer.from(bytes).toString("base64"), Buffer.from(bytes).toString("hex"), Array.from(bytes).join(",")];
    const printed: unknown[] = [];
    for (const m of ["log", "info", "warn", "error", "debug"] as const) vi.spyOn(console, m).mockImplementation((...a: unknown[]) => void printed.push(a));
    let fail = true;
    const flaky: Harness = {
      describe: () => descriptor("flaky"),
      async run(start, sink) {
        if (fail) throw new Error("harness failed");
        await sink.output(`config of ${start.config.length} bytes`);
      },
    };
    const { host, logs } = setup({ flaky });
    await createSession(host, "flaky");
    expect((await drain(host.exec(execReq({ inputs: [userText("x")], config: bytes, resumeFromSeq: 3n })))).failure).toBeDefined();
    fail = false;
    expect((await host.resume()).ok).toBe(true);
    expect((await drain(host.exec(execReq({ inputs: [], config: bytes })))).failure).toBeUndefined();
    expect((await host.suspend()).ok).toBe(true);
    expect(await host.audit(true)).toMatchObject({ ok: true, value: { replay: { ok: true } } });
    // The config is in the journal (byte-exact), and so in what the checks below search.
    const start = fromBinary(EventSchema, journal(host)[0]!.event).body;
    expect(start.case === "executionStart" && Buffer.from(start.value.config).toString()).toContain(secret);
    expect(logs.length).toBeGreaterThan(0);
    const text = JSON.stringify([logs, printed.map((a) => String(a))]);
    for (const f of forms) expect(text).not.toContain(f);
  });

  it("two turns ([same, same] then [same]) get distinct host-minted execution ids that match the Starts; replay gives each turn its own inputs and history and the recorded replies, and leaves the journal unchanged (checklist §8.11 #59)", async () => {
    type Seen = { id: string; inputs: string[]; history: string[] };
    const seen: Seen[] = [];
    const probe: Harness = {
      describe: () => descriptor("probe"),
      async run(start, sink) {
        seen.push({ id: start.executionId, inputs: start.inputs.map(textOf), history: start.history.map((e) => EventKind[e.kind].replace(/^EVENT_/, "")) });
        await sink.model({ model: "m", messages: [userText(textOf(start.inputs[0]))] });
      },
    };
    const models = scriptedModels(counterScript); // a different reply per call
    const { host } = setup({ probe }, () => models);
    await createSession(host, "probe");
    const one = await drain(host.exec(execReq({ inputs: [userText("same"), userText("same")] })));
    const two = await drain(host.exec(execReq({ inputs: [userText("same")] })));
    expect([one.failure, two.failure]).toEqual([undefined, undefined]);
    expect(models.calls).toBe(2);

    const live = seen.splice(0);
    const ids = live.map((s) => s.id);
    expect(ids.every((id) => id !== "")).toBe(true);
    expect(new Set(ids).size).toBe(2);
    // The ids the journal records for each turn's records are the ones the harness was started with.
    const recorded = journal(host).map((r) => fromBinary(EventSchema, r.event).executionId);
    expect(recorded).toEqual([...Array(6).fill(ids[0]), ...Array(5).fill(ids[1])]);
    const before = journal(host);

    const audit = await host.audit(true);
    expect(audit).toMatchObject({
      ok: true,
      value: { chain: { ok: true }, replay: { ok: true, outputs: ["answer #1", "answer #2"], modelCalls: 0, executions: 2 } },
    });
    expect(seen).toEqual([
      { id: ids[0], inputs: ["same", "same"], history: [] },
      { id: ids[1], inputs: ["same"], history: ["EXECUTION_START", "INPUT", "INPUT", "MODEL_CALL", "OUTPUT", "END"] },
    ]);
    expect(seen).toEqual(live);
    expect(models.calls).toBe(2);
    expect(journal(host)).toEqual(before);
  });
});
