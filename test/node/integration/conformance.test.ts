/**
 * The conformance suite (conformance/cases/*.yaml) against the shared `wrangler dev`, one test per
 * case. A case listed in conformance/known-failing.txt is expected to fail (`it.fails`),
 * so this file notices the day it starts passing and its line can be removed.
 */
import { describe, expect, inject, it } from "vitest";
import { loadCases, loadKnownFailing, runCase } from "../../../conformance/index.js";

const cases = loadCases();
const known = loadKnownFailing();

describe("conformance", () => {
  for (const c of cases) {
    const test = known.has(c.id) ? it.fails : it;
    test(`${c.id}: ${c.title} (${c.spec})`, async () => {
      const r = await runCase(c, { url: inject("serverUrl") });
      // The reason names the step and every assertion that did not hold.
      expect(r.reason ?? "ok").toBe("ok");
    });
  }

  it("known-failing.txt: names only cases that exist", () => {
    const ids = new Set(cases.map((c) => c.id));
    expect([...known.keys()].filter((id) => !ids.has(id))).toEqual([]);
  });
});
