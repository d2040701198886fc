/**
 * The .dev.vars format as scripts/start.mjs reads it, the env file it writes for wrangler, and
 * .dev.vars.example as the list of every variable the host reads (issue 11 §5).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../../scripts/dev-server.js";
import { encodeEnvFile, parseDevVars } from "../../../scripts/dev-vars.mjs";
import { configEnv } from "../support/config-env.js";

describe("dev vars", () => {
  it("parseDevVars: bare, quoted and multi-line values, comments and export, with no $ expansion", () => {
    const text = [
      "# a comment",
      "",
      "A=plain value # trailing comment",
      "export B='single $HOME quoted'",
      'C="two\\nlines"',
      "D=`back $tick`",
      'E="multi',
      'line"',
      "F=",
      'G={"json":[1,2]}',
    ].join("\n");
    expect(parseDevVars(text)).toEqual({
      A: "plain value",
      B: "single $HOME quoted",
      C: "two\nlines",
      D: "back $tick",
      E: "multi\nline",
      F: "",
      G: '{"json":[1,2]}',
    });
    expect(() => parseDevVars("NOT A LINE")).toThrow(/line 1/);
    expect(() => parseDevVars("A='open")).toThrow(/never closed/);
  });

  it("encodeEnvFile: every value survives the round trip, $ escaped for wrangler's expansion", () => {
    const vars = { K1: "p$a$$word", K2: `it's`, K3: "two\nlines", K4: '{"k":"v $HOME"}', K5: "" };
    const text = encodeEnvFile(vars);
    expect(text).toContain("K1='p\\$a\\$\\$word'");
    expect(text).not.toMatch(/[^\\]\$/);
    // What the file means once wrangler has undone the escapes is what went in.
    expect(parseDevVars(text.replace(/\\\$/g, "$"))).toEqual(vars);
    expect(() => encodeEnvFile({ X: 'a"b\nc' })).toThrow(/put it in .dev.vars/);
  });

  it(".dev.vars.example: lists every variable objects/config.ts reads, and marks exactly its secrets", () => {
    const text = readFileSync(join(ROOT, ".dev.vars.example"), "utf8");
    const lines = text.split("\n");
    const listed = lines.flatMap((l, i) => {
      const m = /^#([A-Z0-9_]+)=/.exec(l);
      return m ? [{ name: m[1]!, secret: /\[secret\]/.test(lines[i - 1] ?? "") }] : [];
    });
    const { vars, secrets } = configEnv();
    expect(listed.map((v) => v.name).sort()).toEqual([...vars].sort());
    expect(
      listed
        .filter((v) => v.secret)
        .map((v) => v.name)
        .sort(),
    ).toEqual([...secrets].sort());
  });
});
