/**
 * An example harness whose state lives in memory: an integer that each execution increments and
 * outputs. It never reads `start.history`, so a replay could not rebuild the count; that is what
 * RESUMABILITY_REQUIRES_MEMORY_SNAPSHOT declares (docs/contract.md §6.2, I4): only runtimes that
 * snapshot memory may place it, and it forks by clone, not by replay, so it is not fork_safe.
 * A host without memory snapshots refuses sessions on it (FAILED_PRECONDITION) before running it.
 *
 *   agentctl harness serve examples/harnesses/counter.ts  # serves it as "counter"
 */
import { create } from "@bufbuild/protobuf";
import { HarnessDescriptorSchema, Resumability } from "../../sdk/index.js";
import type { Harness } from "../../sdk/harness/index.js";

let count = 0;

export const harness: Harness = {
  describe() {
    return create(HarnessDescriptorSchema, {
      id: "counter",
      version: "1",
      capabilities: { resumability: Resumability.REQUIRES_MEMORY_SNAPSHOT, forkSafe: false },
    });
  },
  async run(_start, sink) {
    count++;
    await sink.output(String(count));
  },
};

/**
 * TEST-ONLY: the count as a "memory image", for the stand-in ateapi's actors
 * (test/fixtures/ateapi/actor-process.ts). This machine cannot snapshot a process's memory (no KVM,
 * CRIU does not run here), so the stand-in asks the harness for its state at a checkpoint and puts
 * it back on restore. On a real substrate actor the sandbox checkpoints the whole process and
 * nothing calls this.
 */
export const testOnlyMemoryImage = {
  capture: (): string => JSON.stringify({ count }),
  restore(image: string): void {
    count = (JSON.parse(image) as { count: number }).count;
  },
};

export default harness;
