/**
 * `npm run bench:cli`: how long one `agentctl --version` takes, compiled (the installed package's
 * bin, packages/sdk/dist/cli/agentctl.js, built first with `npm run build`) against the same CLI from source
 * through tsx (cli/bin/agentctl.js) and through `npx agentctl`. Prints medians; asserts nothing.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CLI_BUNDLE } from "../scripts/build-cli.js";
import { ROOT } from "../scripts/dev-server.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const COMPILED = CLI_BUNDLE;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function time(cmd: string, args: string[]): number {
  const runs: number[] = [];
  execFileSync(cmd, args, { cwd: ROOT, stdio: "ignore" }); // warm: tsx's cache, the OS's file cache
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    execFileSync(cmd, args, { cwd: ROOT, stdio: "ignore" });
    runs.push(performance.now() - t);
  }
  return median(runs);
}

if (!existsSync(COMPILED)) throw new Error("run `npm run build` first: packages/sdk/dist/cli/agentctl.js is missing");
const compiled = time(process.execPath, [COMPILED, "--version"]);
const source = time(process.execPath, [join(ROOT, "cli/bin/agentctl.js"), "--version"]);
const npx = time("npx", ["agentctl", "--version"]);
console.log(`agentctl --version, median of ${ROUNDS}:`);
console.log(`  compiled (packages/sdk)   ${compiled.toFixed(0)} ms`);
console.log(`  from source through tsx   ${source.toFixed(0)} ms  (${(source / compiled).toFixed(1)}x)`);
console.log(`  npx agentctl in the clone ${npx.toFixed(0)} ms  (${(npx / compiled).toFixed(1)}x)`);
