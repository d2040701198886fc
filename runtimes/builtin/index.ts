/**
 * The harnesses built into the host (STATIC in registry terms). `echo` is the default.
 */
import type { Harness } from "../harness-spi.js";
import { echoHarness } from "./echo.js";

export { echoHarness, echoModel, ECHO_MODEL } from "./echo.js";

export const DEFAULT_HARNESS = "echo";

const BUILTIN: ReadonlyMap<string, Harness> = new Map([["echo", echoHarness]]);

export function builtinHarness(name: string): Harness | undefined {
  return BUILTIN.get(name);
}

export function builtinHarnessNames(): string[] {
  return [...BUILTIN.keys()].sort();
}
