/**
 * Harness identity for replay and recovery (docs/behaviour.md §2.7): the harness recorded in an
 * execution's start marker must be served here, and a recorded version must match the served one
 * exactly (whitespace-sensitive; an empty recorded version is not checked).
 */
import type { HarnessDescriptor } from "../../proto/gen/agentsessions/v1/harness_pb.js";
import type { Harness } from "../../runtimes/harness-spi.js";
import { HarnessMismatchError } from "./errors.js";
import type { Execution } from "./execution-log.js";

export interface DescribedHarness {
  name: string;
  harness: Harness;
  descriptor: HarnessDescriptor;
}

/** Resolves a registry name and describes it (bounded); undefined when this host does not serve it. */
export type DescribeHarness = (name: string) => Promise<DescribedHarness | undefined>;

/** Describes each recorded harness at most once per operation. */
export function cachedDescriber(describe: DescribeHarness): DescribeHarness {
  const seen = new Map<string, Promise<DescribedHarness | undefined>>();
  return (name) => {
    let p = seen.get(name);
    if (!p) seen.set(name, (p = describe(name)));
    return p;
  };
}

/** The served harness for a recorded execution, or HarnessMismatchError saying why it cannot run. */
export async function harnessFor(ex: Execution, describe: DescribeHarness, defaultName: string): Promise<DescribedHarness> {
  const name = ex.start.harness || defaultName;
  const served = await describe(name);
  if (!served) {
    throw new HarnessMismatchError(`execution ${ex.id} ran on harness "${name}", which this host does not serve`);
  }
  const recorded = ex.start.harnessVersion;
  if (recorded !== "" && recorded !== served.descriptor.version) {
    throw new HarnessMismatchError(
      `execution ${ex.id} ran on ${name} version ${JSON.stringify(recorded)}, but this host serves version ${JSON.stringify(served.descriptor.version)}`,
    );
  }
  return served;
}
