/**
 * Benchmark routes, served only when the BENCH var is "1" (bench/run.ts sets it). Never exposed by
 * a deployment configuration.
 */
import type { Env } from "../objects/index.js";

export async function serveBench(_req: Request, _env: Env): Promise<Response> {
  return new Response("bench not built yet", { status: 501 });
}
