/**
 * Benchmark routes, served only when the BENCH var is "1" (bench/run.ts sets it); never part of a
 * deployment. Each route is one call into a BenchObject, timed by the caller.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { directoryStub, type Env } from "../objects/index.js";
import { SessionSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { DEFAULT_TENANT, mintSessionUid } from "../proto/ids.js";

/** Lists `n` sessions in `project` of the default tenant's Directory, as rows only (ListSessions' cost). */
async function seedDirectory(env: Env, project: string, n: number): Promise<number> {
  const dir = directoryStub(env, DEFAULT_TENANT);
  const base = Date.now();
  for (let done = 0; done < n; ) {
    const rows = [];
    for (let i = 0; i < Math.min(1000, n - done); i++, done++) {
      const uid = mintSessionUid();
      const session = toBinary(SessionSchema, create(SessionSchema, { metadata: { uid, project, name: `s${done}` }, harness: "echo" }));
      rows.push({ uid, project, createMs: base - done, updateMs: base, headSeq: 0, headHash: "", session });
    }
    await dir.upsertMany(rows);
  }
  return n;
}

export async function serveBench(req: Request, env: Env): Promise<Response> {
  const url = new URL(req.url);
  const stub = env.BENCH_OBJECT.get(env.BENCH_OBJECT.idFromName(url.searchParams.get("object") ?? "bench"));
  const n = Number(url.searchParams.get("n") ?? "1000");
  const size = Number(url.searchParams.get("size") ?? "300");
  switch (url.pathname) {
    case "/_bench/append":
      return Response.json({ head: await stub.append(n, size) });
    case "/_bench/logs":
      return Response.json({ n: await stub.logs(n, size) });
    case "/_bench/plain":
      return Response.json({ head: await stub.plain(n, size) });
    case "/_bench/five":
      return Response.json({ head: await stub.five() });
    case "/_bench/five-stream":
      return new Response(await stub.fiveStream());
    case "/_bench/read":
      return new Response(await stub.read(n, size));
    case "/_bench/readstream":
      return new Response(await stub.readStream(n, size));
    case "/_bench/insert":
      return Response.json({ rows: await stub.insertFloor(n, size) });
    case "/_bench/directory":
      return Response.json({ rows: await seedDirectory(env, url.searchParams.get("project") ?? "bench", n) });
    default:
      return new Response("unknown bench route", { status: 404 });
  }
}
