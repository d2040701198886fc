/**
 * Benchmark routes, served only when the BENCH var is "1" (bench/run.ts sets it); never part of a
 * deployment. Each route is one call into a BenchObject, timed by the caller.
 */
import type { Env } from "../objects/index.js";

export async function serveBench(req: Request, env: Env): Promise<Response> {
  const url = new URL(req.url);
  const stub = env.BENCH_OBJECT.get(env.BENCH_OBJECT.idFromName(url.searchParams.get("object") ?? "bench"));
  const n = Number(url.searchParams.get("n") ?? "1000");
  const size = Number(url.searchParams.get("size") ?? "300");
  switch (url.pathname) {
    case "/_bench/append":
      return Response.json({ head: await stub.append(n, size) });
    case "/_bench/plain":
      return Response.json({ head: await stub.plain(n, size) });
    case "/_bench/five":
      return Response.json({ head: await stub.five() });
    default:
      return new Response("unknown bench route", { status: 404 });
  }
}
