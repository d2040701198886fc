/**
 * The built-in `echo` harness and `echo` model (docs/behaviour.md §7.1): the default harness.
 *
 * Run takes the text of the last input and makes exactly one mediated model call with model `echo`
 * and one user message of that text; the echo model answers `echo:<text of the last message>`.
 * Stateless, so it replays exactly and forks anywhere.
 */
import { create } from "@bufbuild/protobuf";
import { assistantText, textOf, userText } from "../../proto/messages.js";
import { HarnessDescriptorSchema, Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import type { Harness, ModelRequest, ModelResponse } from "../harness-spi.js";

export const ECHO_MODEL = "echo";

export const echoHarness: Harness = {
  sinkOnly: true,
  describe() {
    return create(HarnessDescriptorSchema, {
      id: "echo",
      version: "1",
      models: [ECHO_MODEL],
      capabilities: { resumability: Resumability.STATELESS_REPLAY, forkSafe: true },
    });
  },
  async run(start, sink) {
    const last = start.inputs[start.inputs.length - 1];
    await sink.model({ model: ECHO_MODEL, messages: [userText(textOf(last))] });
  },
};

/** The echo model: answers `echo:` + the text of the request's last message. */
export function echoModel(req: ModelRequest): ModelResponse {
  const last = req.messages[req.messages.length - 1];
  return { message: assistantText("echo:" + textOf(last)) };
}
