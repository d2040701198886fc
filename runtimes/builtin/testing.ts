/**
 * Test-only harnesses, served only when the TEST_HARNESSES var is "1" (the fault tests set it;
 * a deployment never does).
 *
 * `hold`: one mediated model call with the last input's text, then, if the execution config names a
 * `hold_url`, a GET of that URL before returning. A test holds that request open to freeze a live
 * turn right after its OUTPUT is journaled and before END, then kills the server there. The GET is
 * a side channel outside the sink, which is exactly why this harness is not for production.
 */
import { create } from "@bufbuild/protobuf";
import { HarnessDescriptorSchema, Resumability } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { textOf, userText } from "../../proto/messages.js";
import type { Harness } from "../harness-spi.js";

export const holdHarness: Harness = {
  describe() {
    return create(HarnessDescriptorSchema, {
      id: "hold",
      version: "1",
      capabilities: { resumability: Resumability.STATELESS_REPLAY },
    });
  },
  async run(start, sink) {
    const config = start.config.length ? (JSON.parse(new TextDecoder().decode(start.config)) as { hold_url?: string; model?: string }) : {};
    await sink.model({ model: config.model ?? "", messages: [userText(textOf(start.inputs[start.inputs.length - 1]))] });
    if (config.hold_url) {
      const res = await fetch(config.hold_url, { signal: start.signal });
      await res.arrayBuffer();
    }
  },
};
