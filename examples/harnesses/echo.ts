/**
 * An example harness: the built-in echo (runtimes/builtin/echo.ts) written against the public SDK.
 * Each execution makes exactly one host-mediated model call, model "echo", with the text of the last
 * input; the host journals the call and its answer (`echo:<text>`). Stateless: it rebuilds
 * everything from Start, so it replays exactly and forks anywhere.
 *
 *   agentctl harness serve examples/harnesses/echo.ts      # serves it as "example-echo"
 */
import { create } from "@bufbuild/protobuf";
import { HarnessDescriptorSchema, Resumability, textOf, userText } from "../../sdk/index.js";
import type { Harness } from "../../sdk/harness/index.js";

const harness: Harness = {
  describe() {
    return create(HarnessDescriptorSchema, {
      id: "example-echo",
      version: "1",
      models: ["echo"],
      capabilities: { resumability: Resumability.STATELESS_REPLAY, forkSafe: true },
    });
  },
  async run(start, sink) {
    const last = start.inputs[start.inputs.length - 1];
    await sink.model({ model: "echo", messages: [userText(textOf(last))] });
  },
};

export default harness;
