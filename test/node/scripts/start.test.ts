/**
 * `npm start` as a new user runs it (issue 11 §5; scripts/start.mjs): AUTH_MODE from .dev.vars is
 * honoured and said on the first screen, no secret appears in any process's argument list, and
 * SIGTERM to the npm process stops wrangler and workerd, freeing the port.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, ROOT, sleep } from "../../../scripts/dev-server.js";

const KEY = "tok-start-from-dev-vars";
const SHELL_SECRET = "sk-shell-secret-7f3a";
let dir: string | undefined;
let npm: ChildProcess | undefined;

afterEach(async () => {
  if (npm?.pid !== undefined && npm.exitCode === null) npm.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/**
 * Starts `npm start` in its own process group, and resolves once it says it is ready. A port found
 * free can be taken by another test's server before workerd binds it; that start exits with
 * "Address already in use" before serving anything, and is tried again on another port (as
 * scripts/dev-server.ts tries a wrangler that exits before serving).
 */
async function npmStart(env: Record<string, string>): Promise<{ port: number; out: () => string }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await npmStartOnce(env);
    } catch (e) {
      if (attempt >= 3 || !(e instanceof Error) || !e.message.includes("Address already in use")) throw e;
      // Whatever of that start's group is left (npm has exited) goes before the next one.
      try {
        if (npm?.pid !== undefined) process.kill(-npm.pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
  }
}

async function npmStartOnce(env: Record<string, string>): Promise<{ port: number; out: () => string }> {
  const port = await freePort();
  let out = "";
  npm = spawn("npm", ["start"], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    // TMPDIR too: wrangler keeps its update check there, and the test removes its own folder.
    env: { ...process.env, ...env, PORT: String(port), AGENTSESSIONS_STATE: join(dir!, "state"), TMPDIR: dir! },
  });
  npm.stdout!.on("data", (d) => (out += d));
  npm.stderr!.on("data", (d) => (out += d));
  // The first screen ends with the authentication line (and the vars line, when there are any).
  const ready = /agentsessions: authentication[^\n]*\n/;
  for (let i = 0; i < 600 && !ready.test(out); i++) {
    if (npm.exitCode !== null) throw new Error(`npm start exited ${npm.exitCode}: ${out}`);
    await sleep(100);
  }
  if (!ready.test(out)) throw new Error(`npm start was not ready within 60 s: ${out}`);
  return { port, out: () => out };
}

/** Processes (pid and args) whose command line mentions this port. */
function processesOn(port: number): string[] {
  return execFileSync("ps", ["-eo", "pid=,stat=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.includes(`--port ${port}`) && !/^\s*\d+\s+Z/.test(l));
}

async function listening(port: number): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/healthz`).then(
    (r) => r.ok,
    () => false,
  );
}

describe("npm start", () => {
  it("start: AUTH_MODE=keys in .dev.vars is honoured and said; no secret is on any command line; SIGTERM to npm frees the port", async () => {
    dir = mkdtempSync(join(tmpdir(), "npm-start-"));
    const devVars = join(dir, "dev.vars");
    const entry = { id: "k1", sha256: createHash("sha256").update(KEY).digest("hex"), tenant: "default", principal: "me", roles: ["admin"] };
    writeFileSync(devVars, `AUTH_MODE=keys\nAUTH_KEYS='${JSON.stringify([entry])}'\n`);
    const { port, out } = await npmStart({ AGENTSESSIONS_DEV_VARS: devVars, MODEL_API_KEY: SHELL_SECRET });
    expect(out()).toContain("agentsessions: API and UI on");
    expect(out()).toContain(`authentication: AUTH_MODE=keys (from ${devVars})`);
    // The line after the one waited for (written with it, in one write).
    await expect.poll(out, { timeout: 5000 }).toContain("MODEL_API_KEY (secret)");
    expect(out()).not.toContain(SHELL_SECRET);

    const list = (token?: string) =>
      fetch(`http://127.0.0.1:${port}/agentsessions.v1.Sessions/ListSessions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: "{}",
      }).then((r) => r.status);
    expect(await list()).toBe(401);
    expect(await list(KEY)).toBe(200);

    const args = execFileSync("ps", ["-eo", "args="], { encoding: "utf8" });
    expect(args).not.toContain(SHELL_SECRET);
    expect(args).not.toContain(entry.sha256);
    expect(processesOn(port).length).toBeGreaterThan(0);

    process.kill(npm!.pid!, "SIGTERM");
    for (let i = 0; i < 200 && (processesOn(port).length > 0 || (await listening(port))); i++) await sleep(100);
    expect(processesOn(port)).toEqual([]);
    expect(await listening(port)).toBe(false);
  });

  it("start: with no AUTH_MODE anywhere, authentication is off on loopback, and the first screen says how to turn it on", async () => {
    dir = mkdtempSync(join(tmpdir(), "npm-start-"));
    const { port, out } = await npmStart({ AGENTSESSIONS_DEV_VARS: join(dir, "absent.vars") });
    expect(out()).toContain("authentication is off (AUTH_MODE=none");
    const r = await fetch(`http://127.0.0.1:${port}/agentsessions.v1.Sessions/ListSessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(r.status).toBe(200);
    process.kill(npm!.pid!, "SIGTERM");
    for (let i = 0; i < 200 && processesOn(port).length > 0; i++) await sleep(100);
    expect(processesOn(port)).toEqual([]);
  });
});
