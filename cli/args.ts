/**
 * A small hand-written flag parser for agentctl (no dependency): `--flag value`, `--flag=value`,
 * boolean switches, repeatable flags, positionals and `--` to end flags. Anything it does not know
 * is a UsageError, which main turns into the usage text and exit status 2.
 * Used by cli/main.ts and every command; tested in test/node/cli/args.test.ts.
 */
import { parseContentHash, type ContentHash } from "../proto/canon.js";

/** A mistake in how the command was invoked: exit status 2 with the usage text. */
export class UsageError extends Error {
  override name = "UsageError";
}

export type FlagKind = "string" | "boolean" | "repeated";

/** Flag names (without dashes) to kinds; `aliases` maps short names such as `h` to long ones. */
export interface FlagSpec {
  flags: Record<string, FlagKind>;
  aliases?: Record<string, string>;
}

export interface ParsedArgs {
  strings: Map<string, string>;
  booleans: Set<string>;
  repeated: Map<string, string[]>;
  positionals: string[];
}

export function parseArgs(argv: readonly string[], spec: FlagSpec): ParsedArgs {
  const out: ParsedArgs = { strings: new Map(), booleans: new Set(), repeated: new Map(), positionals: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      out.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      out.positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const raw = arg.replace(/^--?/, "");
    let name = eq === -1 ? raw : raw.slice(0, raw.indexOf("="));
    name = spec.aliases?.[name] ?? name;
    const kind = spec.flags[name];
    if (!kind) throw new UsageError(`unknown flag ${eq === -1 ? arg : arg.slice(0, eq)}`);
    if (kind === "boolean") {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      out.booleans.add(name);
      continue;
    }
    let value: string;
    if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else {
      // The next argument is the value even when it is empty (`--prev-hash ""`), but a flag is not.
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) throw new UsageError(`--${name} needs a value`);
      value = next;
      i++;
    }
    if (kind === "repeated") out.repeated.set(name, [...(out.repeated.get(name) ?? []), value]);
    else if (out.strings.has(name)) throw new UsageError(`--${name} given twice`);
    else out.strings.set(name, value);
  }
  return out;
}

/** A non-negative integer flag (page sizes, seqs) as a bigint; undefined when absent. */
export function seqFlag(args: ParsedArgs, name: string): bigint | undefined {
  const v = args.strings.get(name);
  if (v === undefined) return undefined;
  if (!/^\d{1,18}$/.test(v)) throw new UsageError(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return BigInt(v);
}

export function hashFlag(args: ParsedArgs, name: string): ContentHash | undefined {
  const v = args.strings.get(name);
  if (v === undefined) return undefined;
  try {
    return parseContentHash(v);
  } catch {
    throw new UsageError(`--${name} must be 64 lowercase hex digits, or "" for the first record`);
  }
}

/** `--label k=v` pairs as a map; a repeated key keeps the last value. */
export function pairsFlag(args: ParsedArgs, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of args.repeated.get(name) ?? []) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`--${name} takes key=value, got ${JSON.stringify(pair)}`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/** The session a command acts on: `--session UID` or the one positional argument. */
export function sessionArg(args: ParsedArgs): string {
  const flag = args.strings.get("session");
  const pos = args.positionals;
  if (pos.length > 1 || (flag !== undefined && pos.length > 0)) {
    throw new UsageError("name one session, either as --session UID or as the argument");
  }
  const uid = flag ?? pos[0];
  if (uid === undefined || uid === "") throw new UsageError("a session is required: pass --session UID");
  return uid;
}

/** Refuses positional arguments where a command takes none. */
export function noPositionals(args: ParsedArgs): void {
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(args.positionals[0])}`);
}
