/**
 * The harnesses a runtime backend hosts: `--harness name=path` flags, each a module whose default
 * (or `harness`) export is a Harness (runtimes/harness-spi.ts), as `agentctl harness serve` takes
 * them.
 *
 * Every module is imported once in the backend's own process at startup: that validates the flag
 * before any session needs it and lets Describe answer without starting a process (as the
 * reference's local runtime does; docs/runtimes.md). The cost is that a module's top-level code
 * also runs there; its `run` never does (executions run only in incarnations).
 * @internal Used by runtimes/pod, runtimes/substrate and their incarnation entries; tested in
 * test/node/pod/ and test/node/substrate/.
 */
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { HARNESS_NAME_RULE, isHarnessName } from "../../proto/harness-name.js";
import type { Harness } from "../harness-spi.js";

export interface HarnessModule {
  name: string;
  /** Absolute path of the module; incarnation processes import it again. */
  path: string;
  harness: Harness;
}

export type HarnessModules = ReadonlyMap<string, HarnessModule>;

/** `name=path` to its parts; throws a message fit for the command line. */
export function parseHarnessFlag(flag: string, cwd = process.cwd()): { name: string; path: string } {
  const eq = flag.indexOf("=");
  if (eq <= 0 || eq === flag.length - 1) throw new Error(`--harness wants NAME=MODULE, got ${JSON.stringify(flag)}`);
  const name = flag.slice(0, eq);
  const path = flag.slice(eq + 1);
  if (!isHarnessName(name)) throw new Error(`--harness name ${JSON.stringify(name)} must be a harness name: ${HARNESS_NAME_RULE}`);
  return { name, path: isAbsolute(path) ? path : resolve(cwd, path) };
}

export async function loadHarnessModules(specs: readonly { name: string; path: string }[]): Promise<HarnessModules> {
  const out = new Map<string, HarnessModule>();
  for (const s of specs) {
    if (out.has(s.name)) throw new Error(`--harness ${s.name} is given twice`);
    out.set(s.name, { ...s, harness: await importHarness(s.path) });
  }
  return out;
}

export async function importHarness(path: string): Promise<Harness> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`cannot load ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const h = mod.default ?? mod.harness;
  if (!isHarness(h)) throw new Error(`${path} must export a Harness (describe and run) as its default export or as \`harness\``);
  return h;
}

export function isHarness(v: unknown): v is Harness {
  const h = v as Partial<Harness> | null | undefined;
  return typeof h === "object" && h !== null && typeof h.describe === "function" && typeof h.run === "function";
}
