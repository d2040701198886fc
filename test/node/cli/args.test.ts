/**
 * The agentctl flag parser, in process.
 */
import { describe, expect, it } from "vitest";
import { pairsFlag, parseArgs, seqFlag, sessionArg, UsageError, type FlagSpec } from "../../../cli/args.js";

const SPEC: FlagSpec = {
  flags: { session: "string", input: "repeated", json: "boolean", help: "boolean", "prev-hash": "string", label: "repeated", from: "string" },
  aliases: { h: "help" },
};

describe("parseArgs", () => {
  it("parseArgs: reads --flag value, --flag=value, switches, repeats and positionals", () => {
    const a = parseArgs(["get", "--session", "s1", "--input=a", "--input", "b", "--json", "-h", "x"], SPEC);
    expect(a.strings.get("session")).toBe("s1");
    expect(a.repeated.get("input")).toEqual(["a", "b"]);
    expect([...a.booleans].sort()).toEqual(["help", "json"]);
    expect(a.positionals).toEqual(["get", "x"]);
  });

  it('parseArgs: an empty value is a value (--prev-hash "")', () => {
    expect(parseArgs(["--prev-hash", ""], SPEC).strings.get("prev-hash")).toBe("");
  });

  it("parseArgs: -- ends flags, so an input may start with dashes", () => {
    const a = parseArgs(["--input=--odd", "--", "--json"], SPEC);
    expect(a.repeated.get("input")).toEqual(["--odd"]);
    expect(a.positionals).toEqual(["--json"]);
  });

  it.each([
    [["--nope"], /unknown flag --nope/],
    [["-x"], /unknown flag -x/],
    [["--session"], /--session needs a value/],
    [["--session", "--json"], /--session needs a value/],
    [["--session", "a", "--session", "b"], /given twice/],
    [["--json=1"], /takes no value/],
  ])("parseArgs: %j is a UsageError", (argv, message) => {
    expect(() => parseArgs(argv, SPEC)).toThrow(UsageError);
    expect(() => parseArgs(argv, SPEC)).toThrow(message);
  });

  it("seqFlag, pairsFlag, sessionArg: validate their values", () => {
    expect(seqFlag(parseArgs(["--from", "12"], SPEC), "from")).toBe(12n);
    expect(() => seqFlag(parseArgs(["--from", "-1"], SPEC), "from")).toThrow(UsageError);
    expect(pairsFlag(parseArgs(["--label", "a=b=c", "--label", "d="], SPEC), "label")).toEqual({ a: "b=c", d: "" });
    expect(() => pairsFlag(parseArgs(["--label", "=x"], SPEC), "label")).toThrow(UsageError);
    expect(sessionArg(parseArgs(["s1"], SPEC))).toBe("s1");
    expect(() => sessionArg(parseArgs(["s1", "--session", "s2"], SPEC))).toThrow(UsageError);
  });
});
