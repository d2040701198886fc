/**
 * The conformance runner: executes the YAML cases (conformance/cases/) against a running host over
 * real HTTP and reports one result per case. Used by `npm run conformance` (cli.ts) and by
 * test/node/integration/conformance.test.ts, which runs every case against the shared `wrangler dev`.
 *
 * A case is a list of steps run in order; the first failing step ends the case, because later steps
 * usually depend on what it should have produced. Cases are independent of each other and of what
 * else lives on the host (they create their own sessions, in their own `${unique}` projects), so the
 * suite can run against a shared or deployed server.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadCases, type Case, type Expect, type Step } from "./case.js";
import { check, type NamedRecords } from "./expect.js";
import { callAllPages, createRpc, type CallResult, type Rpc, type Target } from "./rpc.js";
import { isListSessions, resolveMethod } from "./services.js";
import { getPath, interpolate, newScope, type Scope } from "./values.js";

export interface CaseResult {
  id: string;
  title: string;
  spec: string;
  ok: boolean;
  /** Why it failed: the step and every assertion that did not hold. */
  reason?: string;
  ms: number;
}

/**
 * `pass`; `fail` (unexpected); `known` (failed and listed in known-failing.txt); `fixed` (listed
 * but passed: an unexpected result too, so the list is kept honest).
 */
export type Status = "pass" | "fail" | "known" | "fixed";

export interface ConformanceResult extends CaseResult {
  status: Status;
  /** The reason known-failing.txt gives, for `known` and `fixed`. */
  knownReason?: string;
}

export const KNOWN_FAILING_FILE = fileURLToPath(new URL("./known-failing.txt", import.meta.url));

export async function runCase(c: Case, target: Target, rpc: Rpc = createRpc(target)): Promise<CaseResult> {
  const started = Date.now();
  const done = (reason?: string): CaseResult => ({
    id: c.id,
    title: c.title,
    spec: c.spec,
    ok: reason === undefined,
    ...(reason === undefined ? {} : { reason }),
    ms: Date.now() - started,
  });
  const scope = newScope();
  const named: NamedRecords = new Map();
  for (const [i, step] of c.steps.entries()) {
    const times = step.repeat ?? 1;
    for (let n = 0; n < times; n++) {
      const where = `step ${i + 1}${step.call ? ` ${step.call}` : ""}${times > 1 ? ` (run ${n + 1}/${times})` : ""}`;
      try {
        const failures = await runStep(step, rpc, scope, named);
        // The first few say enough; an `every` over many records can fail once per element.
        const more = failures.length > 5 ? `; and ${failures.length - 5} more` : "";
        if (failures.length > 0) return done(`${where}: ${failures.slice(0, 5).join("; ")}${more}`);
      } catch (e) {
        return done(`${where}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }
  return done();
}

async function runStep(step: Step, rpc: Rpc, scope: Scope, named: NamedRecords): Promise<string[]> {
  let result: CallResult;
  if (step.call === undefined) {
    // A step without a call checks what earlier steps saved.
    result = { view: scope.vars, records: [] };
  } else {
    const request = interpolate(step.request ?? {}, scope) as Record<string, unknown>;
    if (step.pages && !isListSessions(resolveMethod(step.call))) throw new Error("pages: true works with ListSessions only");
    result = step.pages ? await callAllPages(rpc, request) : await rpc(step.call, request);
  }
  const failures = check(interpolate(step.expect ?? {}, scope) as Expect, result, named);
  if (failures.length > 0) return failures;
  if (step.as) {
    named.set(step.as, [...(named.get(step.as) ?? []), ...result.records]);
    scope.vars[step.as] = result.view;
  }
  for (const [name, path] of Object.entries(step.save ?? {})) save(scope, name, getPath(result.view, path), path);
  return [];
}

/** `name: path` stores the value; `name[]: path` appends it (a list is concatenated). */
function save(scope: Scope, name: string, value: unknown, path: string): void {
  if (value === undefined) throw new Error(`save ${name}: ${path} is absent in the response`);
  if (!name.endsWith("[]")) {
    scope.vars[name] = value;
    return;
  }
  const key = name.slice(0, -2);
  const list = Array.isArray(scope.vars[key]) ? (scope.vars[key] as unknown[]) : [];
  scope.vars[key] = list.concat(Array.isArray(value) ? value : [value]);
}

/** known-failing.txt: `<case id> <reason>` per line; `#` starts a comment. */
export function loadKnownFailing(file: string = KNOWN_FAILING_FILE): Map<string, string> {
  const known = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const t = line.trim();
    if (t === "" || t.startsWith("#")) continue;
    const [id, ...reason] = t.split(/\s+/);
    known.set(id!, reason.join(" ") || "(no reason given)");
  }
  return known;
}

/** A case is selected when the filter is a substring of its id or equals one of its tags. */
export function selectCases(cases: Case[], filter?: string): Case[] {
  if (!filter) return cases;
  return cases.filter((c) => c.id.includes(filter) || c.tags.includes(filter));
}

export interface RunOptions {
  casesDir?: string;
  knownFailingFile?: string;
  /** Called after each case, for progress output. */
  onResult?: (r: ConformanceResult) => void;
}

/** Runs the selected cases one after another (their order in the files is also their output order). */
export async function runConformanceTests(target: Target, filter?: string, opts: RunOptions = {}): Promise<ConformanceResult[]> {
  const known = loadKnownFailing(opts.knownFailingFile);
  const rpc = createRpc(target);
  const results: ConformanceResult[] = [];
  for (const c of selectCases(loadCases(opts.casesDir), filter)) {
    const r = await runCase(c, target, rpc);
    const knownReason = known.get(c.id);
    const status: Status = knownReason === undefined ? (r.ok ? "pass" : "fail") : r.ok ? "fixed" : "known";
    const res: ConformanceResult = { ...r, status, ...(knownReason === undefined ? {} : { knownReason }) };
    opts.onResult?.(res);
    results.push(res);
  }
  return results;
}
