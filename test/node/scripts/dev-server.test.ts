/**
 * The test servers' launcher (scripts/dev-server.ts): a wrangler that exits before it serves, as it
 * does when another process took its port, is tried again, and when every try fails the error
 * carries the end of wrangler's log (its storage folder, and the log with it, are removed). Its
 * devtools inspector stays detached unless asked for (WITHOUT_DEVTOOLS: attached, wrangler handles
 * every console line a second time). The host runs at LOG_LEVEL=warn beside wrangler's --log-level
 * warn, so the info lines nobody would see are not written (docs/platform.md P18).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sleep, startDevServer, type DevServer } from "../../../scripts/dev-server.js";

let holder: Server | undefined;
let server: DevServer | undefined;
let dir: string | undefined;

afterEach(async () => {
  await server?.dispose();
  server = undefined;
  if (holder?.listening) await new Promise((ok) => holder!.close(ok));
  holder = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Listens on a free loopback port and returns it: the port is taken until the holder closes. */
async function holdPort(): Promise<number> {
  holder = createServer((socket) => socket.destroy());
  await new Promise<void>((ok) => holder!.listen(0, "127.0.0.1", () => ok()));
  return (holder.address() as { port: number }).port;
}

function tmpRoot(): string {
  return process.env.AGENTSESSIONS_TMP ?? "/tmp";
}

describe("startDevServer", () => {
  it("tries again when wrangler exits before serving, and serves once the port is free", async () => {
    const port = await holdPort();
    dir = mkdtempSync(join(tmpRoot(), "agentsessions-devsrv-"));
    const log = join(dir, `wrangler-${port}.log`);
    const starting = startDevServer({ port, persistDir: dir });
    // The first try fails on the taken port; the port is let go before the next one.
    for (let i = 0; i < 600 && !(existsSync(log) && /Address already in use/.test(readFileSync(log, "utf8"))); i++) await sleep(50);
    expect(readFileSync(log, "utf8")).toMatch(/Address already in use/);
    await new Promise((ok) => holder!.close(ok));
    server = await starting;
    expect(server.port).toBe(port);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // No devtools proxy: nothing listens on the inspector port wrangler was given.
    const inspector = await fetch(`http://127.0.0.1:${server.inspectorPort}/json`).then(
      (r) => r.status,
      (e: Error) => String((e.cause as Error | undefined)?.message ?? e),
    );
    expect(inspector).toMatch(/ECONNREFUSED/);
  }, 120_000);

  it("attaches the devtools inspector when asked, for a profiler", async () => {
    server = await startDevServer({ inspector: true });
    const targets = (await (await fetch(`http://127.0.0.1:${server.inspectorPort}/json`)).json()) as { webSocketDebuggerUrl?: string }[];
    expect(targets.length).toBeGreaterThan(0);
    expect(targets[0]!.webSocketDebuggerUrl).toMatch(/^ws:\/\/127\.0\.0\.1:/);
  }, 120_000);

  it("runs the host at LOG_LEVEL=warn: no line for a call that went well; a test may ask for info, and an unusable level is named", async () => {
    /** The Worker's console lines wrangler took in: its debug log keeps every level, shown or not. */
    const linesAfterCall = async (vars: Record<string, string>) => {
      server = await startDevServer({ vars });
      const r = await fetch(`${server.url}/agentsessions.v1.Sessions/ListSessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      expect(r.status).toBe(200);
      const logs = join(server.persistDir, "wrangler-logs");
      const read = () => (existsSync(logs) ? readdirSync(logs).map((f) => readFileSync(join(logs, f), "utf8")) : []).join("\n");
      // The rpc line is written when the call ends, just after its answer: wait for it to land.
      for (let i = 0; i < 40 && !read().includes('"msg":"rpc"'); i++) await sleep(50);
      const text = read();
      await server.dispose();
      server = undefined;
      return { rpc: text.includes('"msg":"rpc"'), config: text.includes('"msg":"config","ignored":["LOG_LEVEL"]') };
    };
    expect(await linesAfterCall({})).toEqual({ rpc: false, config: false });
    expect(await linesAfterCall({ LOG_LEVEL: "info" })).toEqual({ rpc: true, config: false });
    expect(await linesAfterCall({ LOG_LEVEL: "chatty" })).toEqual({ rpc: true, config: true });
  }, 120_000);

  it("says why when every try fails, and removes the storage folder it made", async () => {
    const port = await holdPort();
    // A folder of its own for the server's storage: other test files make theirs in the run's.
    const shared = process.env.AGENTSESSIONS_TMP;
    dir = mkdtempSync(join(tmpRoot(), "agentsessions-devsrv-"));
    process.env.AGENTSESSIONS_TMP = dir;
    let error: Error | undefined;
    try {
      error = await startDevServer({ port }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    } finally {
      if (shared === undefined) delete process.env.AGENTSESSIONS_TMP;
      else process.env.AGENTSESSIONS_TMP = shared;
    }
    expect(error?.message).toMatch(/exited with 1 before serving; its log ends:\n[\s\S]*Address already in use/);
    // Only this try's lines, without colour codes.
    expect(error?.message).not.toMatch(/\x1b\[/);
    expect(error?.message.match(/Address already in use/g)).toHaveLength(1);
    expect(readdirSync(dir).filter((n) => n.startsWith("agentsessions-dev-"))).toEqual([]);
  }, 120_000);
});
