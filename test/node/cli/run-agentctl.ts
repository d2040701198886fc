/**
 * Two ways to run agentctl in a test, with the same result shape:
 * - `agentctl(args)` calls `runCli` (cli/main.ts) in this process with captured stdout and stderr,
 *   a given stdin and environment, and returns its exit status. Behaviour tests use it: each check
 *   costs a function call instead of a Node start with tsx.
 * - `spawnAgentctl(args)` runs `node cli/bin/agentctl.js …` as a real subprocess, the way a person
 *   does, for the few tests about the process itself (bin.test.ts, harness serve, the package).
 * Both see an environment scrubbed of AGENTSESSIONS_* so a developer's shell cannot change what a
 * test sees. Used by the tests in this folder and a few integration tests.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { runCli } from "../../../cli/main.js";
import { ROOT } from "../../../scripts/dev-server.js";

export const AGENTCTL = join(ROOT, "cli/bin/agentctl.js");

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout split into lines, without the trailing empty one. */
  lines: string[];
}

export interface CliOptions {
  /** Standard input, read whole by the commands that take it (`hash`); "" by default. */
  stdin?: string;
  env?: Record<string, string>;
  /** In process only: stderr is a terminal (progress lines are drawn there). */
  errIsTty?: boolean;
}

/** The environment a run sees: the test process's, without AGENTSESSIONS_*, plus `extra`. */
function cliEnv(extra: Record<string, string> | undefined): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
  delete env.AGENTSESSIONS_SERVER;
  delete env.AGENTSESSIONS_TOKEN;
  return Object.assign(env, extra);
}

function linesOf(stdout: string): string[] {
  return stdout.split("\n").filter((l, i, a) => i < a.length - 1 || l !== "");
}

/** agentctl in process: `runCli` with captured output; stdout is not a terminal. */
export async function agentctl(args: readonly string[], opts: CliOptions = {}): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    out: { write: (s: string) => (stdout += s) },
    err: { write: (s: string) => (stderr += s) },
    outIsTty: false,
    errIsTty: opts.errIsTty ?? false,
    env: cliEnv(opts.env),
    readStdin: async () => opts.stdin ?? "",
  });
  return { code, stdout, stderr, lines: linesOf(stdout) };
}

/** agentctl as a real subprocess (`node cli/bin/agentctl.js …` from the repository root). */
export function spawnAgentctl(args: readonly string[], opts: CliOptions = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [AGENTCTL, ...args], { cwd: ROOT, env: cliEnv(opts.env), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  child.stdin.end(opts.stdin ?? "");
  return new Promise((ok, fail) => {
    child.once("error", fail);
    child.once("close", (code) => ok({ code, stdout, stderr, lines: linesOf(stdout) }));
  });
}

/** The uid from an exec's or create's first line, `session sess-…`. */
export function sessionOf(run: CliRun): string {
  const m = /^session (sess-[0-9a-f]{24})$/.exec(run.lines[0] ?? "");
  if (!m) throw new Error(`no session line in agentctl output (exit ${run.code}): ${run.stderr.slice(0, 300)}`);
  return m[1]!;
}
