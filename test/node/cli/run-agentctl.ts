/**
 * Runs agentctl as a real subprocess (`node cli/bin/agentctl.js …`), the way a person does, and
 * collects its exit status and output. The environment is scrubbed of AGENTSESSIONS_* so a
 * developer's shell cannot change what a test sees. Used by the tests in this folder.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "../../../scripts/dev-server.js";

export const AGENTCTL = join(ROOT, "cli/bin/agentctl.js");

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout split into lines, without the trailing empty one. */
  lines: string[];
}

export function agentctl(args: readonly string[], opts: { stdin?: string; env?: Record<string, string> } = {}): Promise<CliRun> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
  delete env.AGENTSESSIONS_SERVER;
  delete env.AGENTSESSIONS_TOKEN;
  Object.assign(env, opts.env);
  const child = spawn(process.execPath, [AGENTCTL, ...args], { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  child.stdin.end(opts.stdin ?? "");
  return new Promise((ok, fail) => {
    child.once("error", fail);
    child.once("close", (code) => ok({ code, stdout, stderr, lines: stdout.split("\n").filter((l, i, a) => i < a.length - 1 || l !== "") }));
  });
}

/** The uid from an exec's or create's first line, `session sess-…`. */
export function sessionOf(run: CliRun): string {
  const m = /^session (sess-[0-9a-f]{24})$/.exec(run.lines[0] ?? "");
  if (!m) throw new Error(`no session line in agentctl output (exit ${run.code}): ${run.stderr.slice(0, 300)}`);
  return m[1]!;
}
