/**
 * The committed generated code (proto/gen) must be exactly what `npm run gen` produces from the
 * .proto files: regenerate into a temp dir offline and compare file by file.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { ROOT } from "../../../scripts/dev-server.js";

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

describe("generated code", () => {
  it("gen: proto/gen is up to date with the .proto files", () => {
    const out = mkdtempSync(join(tmpdir(), "gen-"));
    onTestFinished(() => rmSync(out, { recursive: true, force: true }));
    const template = JSON.stringify({
      version: "v2",
      plugins: [{ local: join(ROOT, "node_modules/.bin/protoc-gen-es"), out, opt: ["target=ts", "import_extension=js"] }],
      inputs: [{ directory: "proto", exclude_paths: ["proto/gen"] }],
    });
    execFileSync(join(ROOT, "node_modules/.bin/buf"), ["generate", "--template", template], { cwd: ROOT, stdio: "pipe" });
    const committed = join(ROOT, "proto/gen");
    const fresh = files(out)
      .map((f) => relative(out, f))
      .sort();
    expect(
      files(committed)
        .map((f) => relative(committed, f))
        .sort(),
    ).toEqual(fresh);
    for (const f of fresh) {
      expect(readFileSync(join(committed, f), "utf8"), `${f} is stale: run npm run gen`).toBe(readFileSync(join(out, f), "utf8"));
    }
  });
});
