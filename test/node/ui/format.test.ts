/**
 * The inspector's JSON for a person (ui/format.ts): arguments shown for an approval keep the marks
 * that would reorder them on screen as visible escapes, and stay valid JSON of the same value.
 */
import { describe, expect, it } from "vitest";
import { jsonLine, prettyJson } from "../../../ui/format.js";

describe("the inspector's JSON", () => {
  it("prettyJson: a right-to-left override and the other reordering marks show as \\u escapes; the text parses back to the value", () => {
    const args = { cmd: "echo safe \u202e;fr- mr\u202c", note: "a\u200fb\u2066c\u2069\u061c", ok: "é 😀 \u2028" };
    const text = prettyJson(args);
    expect(text).toContain("echo safe \\u202e;fr- mr\\u202c");
    expect(text).toContain("a\\u200fb\\u2066c\\u2069\\u061c");
    expect(text).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    // Everything else is as JSON.stringify writes it.
    expect(text).toContain("é 😀 \u2028");
    expect(JSON.parse(text)).toEqual(args);
  });

  it("jsonLine: the collapsed form escapes them too", () => {
    expect(jsonLine({ path: "/tmp/\u202egpj.exe" })).toBe('{"path":"/tmp/\\u202egpj.exe"}');
  });
});
