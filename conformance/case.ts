/**
 * The conformance case format: cases are data, read from `conformance/cases/*.yaml`, and
 * validated strictly on load, because a misspelt assertion key (`equals:` for `equal:`) would
 * otherwise be ignored and the case would pass without checking anything.
 *
 * Imported by the runner and the vitest wrapper (test/node/integration/conformance.test.ts). The step
 * language is described in conformance/README.md.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { resolveMethod } from "./services.js";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface Case {
  id: string;
  title: string;
  /** The spec section the case checks, e.g. "docs/behaviour.md §4.5 item 4, checklist §8.17 item 161". */
  spec: string;
  tags: string[];
  steps: Step[];
  /** The YAML file it came from, for messages. */
  file: string;
}

export interface Step {
  /**
   * RPC method name as in the proto: `Exec` is a Sessions method, `Audit.Verify` one of another
   * service (services.ts); absent = a check over the case's variables.
   */
  call?: string;
  /** The request in proto3-JSON, after `${…}` interpolation. */
  request?: Json;
  /** Run the call this many times (each run saves and is checked). */
  repeat?: number;
  /** ListSessions only: follow next_page_token until it is empty. */
  pages?: boolean;
  /** Keep the result under this name: `${name.path}` reads it, `sameRecords: name` compares with it. */
  as?: string;
  /** Variable name → path into the result; a name ending in `[]` appends (or concatenates a list). */
  save?: Record<string, string>;
  expect?: Expect;
}

/** Assertions on one step's result; paths are dotted proto3-JSON names (`session.metadata.uid`). */
export interface Expect {
  /** The call must fail with this Connect code (`aborted`, `NOT_FOUND`, …). */
  code?: string;
  /** Substring of the error message (case-insensitive). */
  message?: string;
  equal?: Record<string, Json>;
  match?: Record<string, string>;
  exists?: string[];
  absent?: string[];
  length?: Record<string, number>;
  contains?: Record<string, Json>;
  distinct?: string[];
  sameSet?: Record<string, Json>;
  every?: Record<string, Expect>;
  chainVerifies?: boolean;
  sameRecords?: SameRecords;
  sessionOrder?: string;
}

export type SameRecords = string | string[] | { steps: string | string[]; fromSeq?: number; toSeq?: number };

const CASE_KEYS = ["id", "title", "spec", "tags", "steps"];
const STEP_KEYS = ["call", "request", "repeat", "pages", "as", "save", "expect"];
const EXPECT_KEYS = [
  "code",
  "message",
  "equal",
  "match",
  "exists",
  "absent",
  "length",
  "contains",
  "distinct",
  "sameSet",
  "every",
  "chainVerifies",
  "sameRecords",
  "sessionOrder",
];

export const CASES_DIR = fileURLToPath(new URL("./cases/", import.meta.url));

/** Every case in `dir` (default conformance/cases), files in name order, cases in file order. */
export function loadCases(dir: string = CASES_DIR): Case[] {
  const cases: Case[] = [];
  const seen = new Set<string>();
  for (const file of readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    const doc: unknown = parse(readFileSync(join(dir, file), "utf8"));
    if (!Array.isArray(doc)) throw new Error(`${file}: expected a list of cases`);
    for (const raw of doc) {
      const c = checkCase(raw, file);
      if (seen.has(c.id)) throw new Error(`${file}: duplicate case id ${c.id}`);
      seen.add(c.id);
      cases.push(c);
    }
  }
  return cases;
}

function checkCase(raw: unknown, file: string): Case {
  const where = `${file}: case ${isObject(raw) && typeof raw.id === "string" ? raw.id : "?"}`;
  if (!isObject(raw)) throw new Error(`${where}: a case is a mapping`);
  onlyKeys(raw, CASE_KEYS, where);
  for (const k of ["id", "title", "spec"]) {
    if (typeof raw[k] !== "string" || raw[k] === "") throw new Error(`${where}: ${k} is required`);
  }
  // Every case names the section of the docs it checks.
  if (!String(raw.spec).includes("§")) throw new Error(`${where}: spec must cite a section (§…)`);
  if (!Array.isArray(raw.steps) || raw.steps.length === 0) throw new Error(`${where}: steps is a non-empty list`);
  const steps = raw.steps.map((s, i) => checkStep(s, `${where} step ${i + 1}`));
  const tags = Array.isArray(raw.tags) ? raw.tags.map(String) : [];
  return { id: String(raw.id), title: String(raw.title), spec: String(raw.spec), tags, steps, file };
}

function checkStep(raw: unknown, where: string): Step {
  if (!isObject(raw)) throw new Error(`${where}: a step is a mapping`);
  onlyKeys(raw, STEP_KEYS, where);
  if (raw.call === undefined && raw.expect === undefined) throw new Error(`${where}: needs call or expect`);
  if (raw.call !== undefined) {
    if (typeof raw.call !== "string") throw new Error(`${where}: call is a method name`);
    try {
      resolveMethod(raw.call);
    } catch (e) {
      throw new Error(`${where}: call ${raw.call}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  if (raw.expect !== undefined) checkExpect(raw.expect, where);
  return raw as Step;
}

function checkExpect(raw: unknown, where: string): void {
  if (!isObject(raw)) throw new Error(`${where}: expect is a mapping`);
  onlyKeys(raw, EXPECT_KEYS, `${where} expect`);
  if (isObject(raw.every)) for (const [p, sub] of Object.entries(raw.every)) checkExpect(sub, `${where} every ${p}`);
}

function onlyKeys(o: Record<string, unknown>, allowed: string[], where: string): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) throw new Error(`${where}: unknown key "${k}" (allowed: ${allowed.join(", ")})`);
  }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
