/**
 * The per-session overlap guard on the wire (docs/behaviour.md §4.5, §4.8, §4.9, §6.2; checklist §8.17
 * #176), against the shared `wrangler dev`: while one Exec runs, a second Exec, a Suspend and a
 * Resume of the same session are ABORTED and change nothing; the first Exec still completes and a
 * Suspend afterwards succeeds. The in-process checks of the guard's reason are in
 * test/node/session/facade.test.ts and lifecycle.test.ts.
 *
 * The running turn is held by a harness served over the tunnel from this process, which waits on a
 * promise the test releases: no timing is involved.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, describe, expect, inject, it } from "vitest";
import { EventKind } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { HarnessDescriptorSchema, Resumability } from "../../../proto/gen/agentsessions/v1/harness_pb.js";
import { ComputeState } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { randomHex } from "../../../proto/ids.js";
import { textOf, userText } from "../../../proto/messages.js";
import { SessionsClient } from "../../../sdk/client.js";
import { serve, type Harness, type Serving } from "../../../sdk/harness/index.js";

const url = inject("serverUrl");
const client = new SessionsClient({ server: url });
const serving: Serving[] = [];

afterAll(async () => {
  await Promise.all(serving.map((s) => s.close()));
});

/** An echo harness whose first run waits for `release()`; `started` resolves once it is running. */
function heldHarness() {
  let release!: () => void;
  let running!: () => void;
  const gate = new Promise<void>((ok) => (release = ok));
  const started = new Promise<void>((ok) => (running = ok));
  const harness: Harness = {
    describe: () =>
      create(HarnessDescriptorSchema, {
        id: "held-echo",
        version: "1",
        models: ["echo"],
        capabilities: { resumability: Resumability.STATELESS_REPLAY, forkSafe: true },
      }),
    async run(start, sink) {
      running();
      await gate;
      await sink.model({ model: "echo", messages: [userText(textOf(start.inputs[start.inputs.length - 1]))] });
    },
  };
  return { harness, release, started };
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "resolved" as const,
    (e) => ConnectError.from(e).code,
  );

describe("the overlap guard over the wire", () => {
  it("exec (checklist §8.17 #176): a second Exec, a Suspend and a Resume while a turn runs are ABORTED and change nothing; the turn completes; Suspend then succeeds", async () => {
    const held = heldHarness();
    const name = `held-${randomHex(4)}`;
    const s = serve({ url, name, harness: held.harness, backoff: { initialMs: 50, maxMs: 200 } });
    serving.push(s);
    await s.connected;

    const uid = (await client.create({ harness: name })).metadata!.uid;
    const first = client.exec({ session: uid, inputs: ["first"] });
    first.catch(() => undefined); // asserted below; keeps an early rejection from going unhandled
    await held.started;
    // EXECUTION_START and the INPUT are committed before the harness runs.
    const during = await client.get(uid);
    expect(during.lastSeq).toBe(2n);

    expect(await codeOf(client.exec({ session: uid, inputs: ["second"] }))).toBe(Code.Aborted);
    expect(await codeOf(client.exec({ session: uid }))).toBe(Code.Aborted);
    expect(await codeOf(client.suspend(uid))).toBe(Code.Aborted);
    expect(await codeOf(client.resume(uid))).toBe(Code.Aborted);
    const after = await client.get(uid);
    expect({ lastSeq: after.lastSeq, computeState: after.computeState, execState: after.execState }).toEqual({
      lastSeq: during.lastSeq,
      computeState: during.computeState,
      execState: during.execState,
    });

    held.release();
    const done = await first;
    expect(done.outputs).toEqual(["echo:first"]);
    expect(done.records.map((r) => EventKind[r.event!.kind])).toEqual([
      "EVENT_EXECUTION_START",
      "EVENT_INPUT",
      "EVENT_MODEL_CALL",
      "EVENT_OUTPUT",
      "EVENT_END",
    ]);

    const suspended = await client.suspend(uid);
    expect(suspended).toMatchObject({ lastSeq: 6n, computeState: ComputeState.COMPUTE_COLD });
  });
});
