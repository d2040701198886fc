/**
 * Every document the tree refers to is in the repository: a reader of a fresh clone can follow
 * each citation. Checks every source, test, config and doc file for
 * - `docs/<name>.md` paths and links between docs (`](name.md)`, `](name.md#…)`) that name no file;
 * - upper-case document names (`SOMETHING.md`) that are no file of the repository;
 * - `test/<path>.test.ts` paths (a comment saying where something is tested) that name no file;
 * - references to folders outside it (`../shared`) and to the team's private style guide (`STYLE n`).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../../scripts/dev-server.js";

const SKIP_DIRS = new Set(["node_modules", ".git", ".wrangler", "test-results", "scratch", "dist", "gen"]);
const TEXT = /\.(ts|mts|mjs|js|json|md|toml|yaml|yml|proto|txt|html|css|sh)$|^run$/;

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) {
      if (!SKIP_DIRS.has(name) && !name.startsWith(".peers")) files(p, out);
    } else if (TEXT.test(name) && name !== "package-lock.json" && st.size < 2_000_000) out.push(p);
  }
  return out;
}

const all = files(ROOT).concat(files(join(ROOT, ".ci")).filter((p) => !p.includes(`${join(ROOT, ".ci")}${"/"}node_modules`)));
const names = new Set(all.map((p) => basename(p)));
const exists = (p: string) => {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
};

function problems(): string[] {
  const out: string[] = [];
  for (const file of new Set(all)) {
    const rel = relative(ROOT, file);
    if (rel === relative(ROOT, import.meta.filename)) continue;
    const lines = readFileSync(file, "utf8").split("\n");
    lines.forEach((line, i) => {
      const at = `${rel}:${i + 1}`;
      for (const m of line.matchAll(/(?<![\w/.-])docs\/([\w./-]+?\.md)\b/g)) {
        if (!exists(join(ROOT, "docs", m[1]!))) out.push(`${at}: docs/${m[1]} does not exist`);
      }
      if (rel.endsWith(".md")) {
        for (const m of line.matchAll(/\]\(([\w./-]+?\.md)(?:#[\w-]*)?\)/g)) {
          if (!exists(join(dirname(file), m[1]!))) out.push(`${at}: link ${m[1]} does not exist`);
        }
      }
      for (const m of line.matchAll(/\b([A-Z][A-Z0-9_-]{2,}\.md)\b/g)) {
        if (!names.has(m[1]!)) out.push(`${at}: ${m[1]} is not a file of this repository`);
      }
      for (const m of line.matchAll(/(?<![\w/.-])(test\/[\w./-]+?\.test\.ts)\b/g)) {
        if (!exists(join(ROOT, m[1]!))) out.push(`${at}: ${m[1]} does not exist`);
      }
      if (/\.\.\/shared\b/.test(line)) out.push(`${at}: refers to ../shared, outside the repository`);
      if (/\bSTYLE \d/.test(line)) out.push(`${at}: cites a style guide that is not in the repository`);
    });
  }
  return out;
}

describe("references", () => {
  it("docs: every document a source, test or doc file refers to exists in the repository", () => {
    expect(problems()).toEqual([]);
  });
});
