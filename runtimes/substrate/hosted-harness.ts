/**
 * The one harness a bridge hosts (its template's image runs it), for Describe: `--harness
 * NAME=MODULE` imports the module as the pod does (runtimes/node/harness-modules.ts); `--harness
 * NAME=FILE.json` reads a HarnessDescriptor in protobuf JSON, so a bridge deployed apart from the
 * harness's code can still answer without starting an actor.
 * @internal Used by main.ts; tested in test/node/substrate/substrate-main.test.ts.
 */
import { readFileSync } from "node:fs";
import { fromJsonString } from "@bufbuild/protobuf";
import { HarnessDescriptorSchema } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import { loadHarnessModules, parseHarnessFlag } from "../node/harness-modules.js";
import type { HostedHarness } from "./substrate-service.js";

export async function loadHostedHarness(flag: string): Promise<HostedHarness> {
  const { name, path } = parseHarnessFlag(flag);
  if (path.endsWith(".json")) {
    let descriptor;
    try {
      descriptor = fromJsonString(HarnessDescriptorSchema, readFileSync(path, "utf8"));
    } catch (e) {
      throw new Error(`--harness ${name}: ${path} is not a HarnessDescriptor in JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
    return { name, describe: () => descriptor };
  }
  const m = (await loadHarnessModules([{ name, path }])).get(name)!;
  return { name, describe: (signal) => m.harness.describe(signal) };
}
