/**
 * The published package (packages/sdk), as a user gets it: built (`npm run build`: tsc, then the
 * bundled bin, scripts/build-cli.ts), packed
 * with `npm pack`, installed globally into a temp prefix (`npm i -g --prefix`, its dependencies
 * from the npm cache) and into a temp project. From a folder outside the clone, the installed
 * `agentctl` prints its version and runs a turn against a test server, and the README's client
 * example runs unchanged against the package's `exports`. Everything is removed afterwards.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildCli } from "../../../scripts/build-cli.js";
import { ROOT } from "../../../scripts/dev-server.js";

const run = promisify(execFile);
const PKG = join(ROOT, "packages/sdk");
const manifest = JSON.parse(readFileSync(join(PKG, "package.json"), "utf8")) as { name: string; version: string; bin: Record<string, string> };
let scratch: string;
let tarball: string;
let prefix: string;

/** npm with the caller's cache, quiet, and never the registry's audit or funding calls. */
const npm = (args: string[], cwd: string) =>
  run("npm", [...args, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], { cwd, env: { ...process.env, NO_COLOR: "1" }, timeout: 180_000 });

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "agentctl-package-"));
  await run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(PKG, "tsconfig.json")], { cwd: ROOT, timeout: 180_000 });
  await buildCli();
  await npm(["pack", "--pack-destination", scratch], PKG);
  tarball = join(scratch, readdirSync(scratch).find((f) => f.endsWith(".tgz"))!);
  prefix = join(scratch, "prefix");
  await npm(["install", "--global", "--prefix", prefix, tarball], scratch);
}, 300_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The installed bin, run from a folder outside the clone with a clean environment. */
const agentctl = (args: string[]) =>
  run(join(prefix, "bin", "agentctl"), args, { cwd: scratch, env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1" }, timeout: 60_000 });

describe("the installed package", () => {
  it("npm pack: the tarball holds compiled JavaScript and .d.ts, the README, and no TypeScript source", async () => {
    const { stdout } = await run("tar", ["-tzf", tarball]);
    const files = stdout.trim().split("\n");
    expect(files).toEqual(
      expect.arrayContaining(["package/package.json", "package/README.md", `package/${manifest.bin.agentctl}`, "package/dist/sdk/index.d.ts"]),
    );
    expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
    expect(manifest.name).toMatch(/^@[a-z0-9-]+\/[a-z0-9-]+$/);
  });

  it("agentctl --version: the installed bin prints the package version from any folder", async () => {
    const { stdout } = await agentctl(["--version"]);
    expect(stdout).toBe(`agentctl ${manifest.version}\n`);
  });

  it("agentctl exec: the installed bin runs a turn against a test server", async () => {
    const { stdout } = await agentctl(["exec", "--input", "hello", "--server", inject("serverUrl")]);
    const lines = stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^session sess-[0-9a-f]{24}$/);
    expect(lines.slice(1).map((l) => l.replace(/^seq=\d+\s+/, "").split(/\s+/)[0])).toEqual([
      "EVENT_EXECUTION_START",
      "EVENT_INPUT",
      "EVENT_MODEL_CALL",
      "EVENT_OUTPUT",
      "EVENT_END",
    ]);
    expect(stdout).toContain("assistant: echo:hello");
  });

  it("README example: the client example runs in a project that installed the tarball", async () => {
    const project = join(scratch, "project");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), '{ "name": "readme-example", "private": true }\n');
    await npm(["install", tarball], project);
    const readme = readFileSync(join(PKG, "README.md"), "utf8");
    const code = /<!-- example: client -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(code).toBeDefined();
    writeFileSync(join(project, "turn.mjs"), code!);
    const { stdout } = await run(process.execPath, ["turn.mjs"], {
      cwd: project,
      env: { ...process.env, AGENTSESSIONS_SERVER: inject("serverUrl") },
      timeout: 60_000,
    });
    expect(stdout).toMatch(/^session sess-[0-9a-f]{24}: echo:hello\nVERIFIED 5 records\n$/);
  });
});
