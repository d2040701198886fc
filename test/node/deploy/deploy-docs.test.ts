/**
 * What docs/deploy.md and docs/observability.md say that can be checked without a Cloudflare
 * account: every environment of wrangler.toml builds offline (`wrangler deploy --dry-run
 * --outdir`) with all its Durable Objects bound; the variables table lists exactly what
 * objects/config.ts reads, and marks exactly its secrets; the environments table matches
 * wrangler.toml; the backup loop exports every session as a SQLite file (run with the compiled
 * agentctl against the shared test server); and the log line tables match the lines written.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code } from "@connectrpc/connect";
import { configEnv } from "../support/config-env.js";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { timePhase, withRequestId, type PhaseLine } from "../../../objects/request-context.js";
import { ROOT } from "../../../scripts/dev-server.js";
import { logRpc } from "../../../worker/request-log.js";
import { captureConsole, structured } from "../support/console-lines.js";

const run = promisify(execFile);
const read = (p: string) => readFileSync(join(ROOT, p), "utf8");
const deployDoc = read("docs/deploy.md");
const observabilityDoc = read("docs/observability.md");
const wranglerToml = read("wrangler.toml");

/** The rows of the markdown table whose header starts with `first`: cells, backticks removed. */
function tableRows(doc: string, first: string): string[][] {
  const lines = doc.split("\n");
  const start = lines.findIndex((l) => new RegExp(`^\\|\\s*${first}\\s*\\|`).test(l));
  expect(start, `a table headed "${first}"`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const l of lines.slice(start + 2)) {
    if (!l.startsWith("|")) break;
    rows.push(
      l
        .split("|")
        .slice(1, -1)
        .map((c) => c.trim().replace(/`/g, "")),
    );
  }
  return rows;
}

const environments = [...wranglerToml.matchAll(/^\[env\.([a-z]+)\]$/gm)].map((m) => m[1]!);
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "deploy-docs-"));
});
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("docs/deploy.md", () => {
  it("environments: the table names exactly wrangler.toml's environments and their Worker names", () => {
    expect(environments).toEqual(["staging", "production"]);
    const rows = tableRows(deployDoc, "environment");
    expect(rows.map((r) => r[0])).toEqual(environments);
    for (const [env, name, command] of rows) {
      expect(wranglerToml).toContain(`[env.${env}]\nname = "${name}"`);
      expect(command).toBe(`npx wrangler deploy --env ${env}`);
    }
  });

  it("variables: the table lists exactly the variables objects/config.ts reads, and marks exactly its secrets", () => {
    const { vars, secrets } = configEnv();
    expect(vars.length).toBeGreaterThan(30);
    const rows = tableRows(deployDoc, "variable");
    expect(rows.map((r) => r[0]).sort()).toEqual([...vars].sort());
    expect(
      rows
        .filter((r) => r[1] === "yes")
        .map((r) => r[0])
        .sort(),
    ).toEqual([...secrets].sort());
    expect(new Set(rows.map((r) => r[1]))).toEqual(new Set(["yes", "no"]));
    // No secret is given a value in wrangler.toml.
    for (const s of secrets) expect(wranglerToml).not.toMatch(new RegExp(`^${s}\\s*=`, "m"));
  });

  it("wrangler deploy --dry-run: the local configuration and each environment build offline, with every Durable Object bound", async () => {
    const bindings = [...wranglerToml.split("[env.")[0]!.matchAll(/^name = "([A-Z_]+)"$/gm)].map((m) => m[1]!);
    expect(bindings).toEqual(["SESSIONS", "DIRECTORY", "HARNESS_TUNNELS", "TENANT_LIMITS", "BENCH_OBJECT"]);
    for (const env of ["", ...environments]) {
      const out = join(scratch, `out-${env || "local"}`);
      const args = [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", out, "-c", join(ROOT, "wrangler.toml")];
      if (env) args.push("--env", env);
      const { stdout } = await run(process.execPath, args, {
        cwd: ROOT,
        timeout: 180_000,
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1", WRANGLER_LOG_PATH: join(scratch, "wrangler-logs"), TMPDIR: scratch },
      });
      expect(readdirSync(out), env).toContain("index.js");
      for (const b of bindings) expect(stdout, `${env}: ${b}`).toContain(`env.${b} (`);
      if (env) expect(stdout, env).toContain('env.AUTH_MODE ("keys")');
    }
  }, 300_000);

  it("backups: the documented loop exports every listed session as a SQLite file", async () => {
    const server = inject("serverUrl");
    await run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(ROOT, "packages/sdk/tsconfig.json")], {
      cwd: ROOT,
      timeout: 180_000,
    });
    const bin = join(scratch, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "agentctl"), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, "packages/sdk/dist/cli/entry.js")}" "$@"\n`);
    chmodSync(join(bin, "agentctl"), 0o755);
    const env = { PATH: `${bin}:${process.env.PATH}`, AGENTSESSIONS_SERVER: server, HOME: process.env.HOME, NO_COLOR: "1" };
    const project = `backup-${Date.now()}`;
    for (const input of ["one", "two"]) {
      const { stdout } = await run(join(bin, "agentctl"), ["create", "--project", project], { env });
      const uid = /^session (sess-[0-9a-f]{24})$/m.exec(stdout)?.[1];
      await run(join(bin, "agentctl"), ["exec", "--session", uid!, "--input", input], { env });
    }
    const loop = /```sh\n(export AGENTSESSIONS_SERVER[\s\S]*?)```/.exec(deployDoc)?.[1];
    expect(loop).toBeDefined();
    // The server and token come from the environment here; the list is this test's project.
    const script = loop!
      .split("\n")
      .filter((l) => !l.startsWith("export "))
      .join("\n")
      .replace("agentctl list", `agentctl list --project ${project}`);
    const dir = join(scratch, "backups");
    mkdirSync(dir);
    await run("bash", ["-euo", "pipefail", "-c", script], { cwd: dir, env, timeout: 120_000 });
    const files = readdirSync(join(dir, "backup"));
    expect(files).toHaveLength(2);
    for (const f of files) {
      expect(f).toMatch(/^sess-[0-9a-f]{24}\.sqlite$/);
      expect(
        readFileSync(join(dir, "backup", f))
          .subarray(0, 15)
          .toString(),
      ).toBe("SQLite format 3");
    }
  }, 300_000);
});

describe("docs/observability.md", () => {
  const fieldsOf = (first: string) => tableRows(observabilityDoc, first).map((r) => r[0]!);

  it("the request line: the documented fields are exactly those logRpc writes, for a unary call and a stream", () => {
    const captured = captureConsole();
    try {
      logRpc({ requestId: "r", tenant: "t", session: "s", operation: "GetSession", code: undefined, durationMs: 1 });
      logRpc({ requestId: "r", tenant: "t", session: "s", operation: "Exec", code: Code.Internal, durationMs: 9, firstMessageMs: 2 });
    } finally {
      vi.restoreAllMocks();
    }
    const lines = structured(captured);
    const documented = fieldsOf("field").slice(0, 9);
    expect(Object.keys(lines[1]!)).toEqual(documented);
    expect(Object.keys(lines[0]!)).toEqual(documented.filter((f) => f !== "first_message_ms"));
    expect(lines[1]).toMatchObject({ level: "error", msg: "rpc", outcome: "Internal" });
  });

  it("the phase line: the documented fields are exactly those timePhase writes", async () => {
    const written: PhaseLine[] = [];
    await withRequestId("r", () => timePhase("model", async () => undefined, { log: (l) => void written.push(l) }));
    const tables = observabilityDoc.split("## Phase lines")[1]!;
    expect(Object.keys(written[0]!)).toEqual(tableRows(tables, "field").map((r) => r[0]));
  });
});
