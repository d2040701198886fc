/**
 * Values in the step language: dotted paths into proto3-JSON, `${…}` interpolation, and equality
 * with proto3's "missing means default" rule. Internal to conformance/ (@internal).
 */
import { randomBytes } from "node:crypto";
import { isObject, type Json } from "./case.js";

/** `records.0.event.kind`; a numeric segment indexes a list, `-1` is its last element. */
export function getPath(root: unknown, path: string): unknown {
  if (path === "" || path === ".") return root;
  let v: unknown = root;
  for (const seg of path.split(".")) {
    if (Array.isArray(v) && /^-?\d+$/.test(seg)) {
      const i = Number(seg);
      v = v[i < 0 ? v.length + i : i];
    } else if (isObject(v)) {
      v = v[seg];
    } else {
      return undefined;
    }
  }
  return v;
}

export interface Scope {
  vars: Record<string, unknown>;
  /** The value of `${unique}`: one per case run, so every step of a case sees the same one. */
  unique: string;
}

export function newScope(): Scope {
  return { vars: {}, unique: randomBytes(6).toString("hex") };
}

const PLACEHOLDER = /\$\{([^}]+)\}/g;

/**
 * Replaces `${name}` / `${name.path}` in every string of `v`. A string that is exactly one
 * placeholder takes the variable's own value (a list stays a list); otherwise it is spliced in as
 * text. `${unique}` is fixed per case; `${fresh}` is new at each use.
 */
export function interpolate(v: unknown, scope: Scope): unknown {
  if (typeof v === "string") {
    const whole = /^\$\{([^}]+)\}$/.exec(v);
    if (whole) return lookup(whole[1]!, scope);
    return v.replace(PLACEHOLDER, (_, name: string) => String(lookup(name, scope)));
  }
  if (Array.isArray(v)) return v.map((x) => interpolate(x, scope));
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [String(interpolate(k, scope)), interpolate(x, scope)]));
  return v;
}

function lookup(name: string, scope: Scope): unknown {
  if (name === "unique") return scope.unique;
  if (name === "fresh") return randomBytes(6).toString("hex");
  const [head, ...rest] = name.split(".");
  if (!(head! in scope.vars)) throw new Error(`unknown variable \${${name}}`);
  const value = getPath(scope.vars[head!], rest.join("."));
  if (value === undefined) throw new Error(`\${${name}} has no value`);
  return value;
}

/** What proto3-JSON omits: a field that is missing reads as one of these. */
export function isDefault(v: unknown): boolean {
  if (v === undefined || v === null || v === "" || v === 0 || v === "0" || v === false) return true;
  if (typeof v === "string" && v.endsWith("_UNSPECIFIED")) return true;
  if (Array.isArray(v)) return v.length === 0;
  return isObject(v) && Object.keys(v).length === 0;
}

/**
 * Deep equality for proto3-JSON. int64 is a JSON string, so 5 equals "5"; a field missing on one
 * side equals the default value on the other (proto3-JSON omits defaults, docs/contract.md §7.2).
 */
export function jsonEqual(actual: unknown, expected: unknown): boolean {
  if (actual === undefined || expected === undefined) return isDefault(actual) && isDefault(expected);
  if (Array.isArray(actual) || Array.isArray(expected)) {
    return Array.isArray(actual) && Array.isArray(expected) && actual.length === expected.length && actual.every((a, i) => jsonEqual(a, expected[i]));
  }
  if (isObject(actual) || isObject(expected)) {
    if (!isObject(actual) || !isObject(expected)) return false;
    const keys = new Set([...Object.keys(actual), ...Object.keys(expected)]);
    return [...keys].every((k) => jsonEqual(actual[k], expected[k]));
  }
  if (typeof actual === "number" || typeof expected === "number" || typeof actual === "bigint") {
    return String(actual) === String(expected);
  }
  return actual === expected;
}

/** Short form for failure messages. */
export function show(v: unknown): string {
  if (v === undefined) return "(absent)";
  const s = JSON.stringify(v as Json, (_, x: unknown) => (typeof x === "bigint" ? x.toString() : x));
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
