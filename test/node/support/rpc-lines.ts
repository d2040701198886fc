/**
 * The `rpc` request lines a test host wrote (docs/observability.md), found by request id in
 * wrangler's debug logs under the server's storage folder, which keep every level. The host must
 * run at LOG_LEVEL=info for OK lines to be written at all.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { DevServer } from "../../../scripts/dev-server.js";

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** Every `rpc` line wrangler took in for `requestId`. */
export function rpcLines(server: DevServer, requestId: string): Record<string, unknown>[] {
  const dir = join(server.persistDir, "wrangler-logs");
  if (!existsSync(dir)) return [];
  const out: Record<string, unknown>[] = [];
  for (const f of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, f), "utf8").split("\n")) {
      const at = line.indexOf('{"level"');
      if (at < 0 || !line.includes(`"request_id":"${requestId}"`) || !line.includes('"msg":"rpc"')) continue;
      out.push(JSON.parse(line.slice(at)) as Record<string, unknown>);
    }
  }
  return out;
}

/** The request's one line, once it has landed (and no second one after a while). */
export async function rpcLineOf(server: DevServer, requestId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 100 && rpcLines(server, requestId).length === 0; i++) await sleep(50);
  await sleep(200);
  const lines = rpcLines(server, requestId);
  expect(lines).toHaveLength(1);
  return lines[0]!;
}
