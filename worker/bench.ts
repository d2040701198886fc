/**
 * Benchmark routes, served only when the BENCH var is "1" (bench/run.ts sets it); never part of a
 * deployment. Each route is one call into a BenchObject, timed by the caller.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { directoryStub, type Env, sessionStub } from "../objects/index.js";
import { CreateSessionRequestSchema, ExecRequestSchema, SessionSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { userText } from "../proto/messages.js";
import { DEFAULT_TENANT, mintSessionUid } from "../proto/ids.js";
import { envelopeFrame } from "../proto/record-envelopes.js";

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

type Entry = (req: Request, env: Env, ctx: ExecutionContext) => Promise<Response>;

const RPC = "/agentsessions.v1.Sessions/";
const STREAM = { "content-type": "application/connect+proto", "connect-protocol-version": "1" };
/** Requests per session in the loop's turns: each session's first is made untimed. */
const LOOP_TURNS_PER_SESSION = 200;
/** As many bytes as an echo turn's answer, for the five-row call that answers like one. */
const ECHO_ANSWER_BYTES = 1300;

/**
 * The loop's kinds: each makes one request, or one call into an object, the way its name says.
 * `session` is the kind's session for those that need one (opened by the loop).
 */
interface LoopKind {
  harness?: "echo" | "chat";
  /** The kind's object is a new one every LOOP_TURNS_PER_SESSION requests, as a kind with a harness gets a new session. */
  renewed?: true;
  run(i: number, session: string): Promise<unknown>;
}

/**
 * `n` requests of one kind made inside this isolate through the Worker's own entry (`entry`, the
 * default export's fetch), one after another, and the microseconds each took: what a request
 * costs the Worker and its objects without the HTTP server, wrangler's proxy and the client.
 * `bench/run.ts` (the `inside` row) says what each kind stops at.
 */
async function loop(entry: Entry, env: Env, ctx: ExecutionContext, outer: Request, kind: string, n: number): Promise<Response> {
  // The inner requests go to the outer one's address (AUTH_MODE=none serves loopback addresses only).
  const origin = new URL(outer.url).origin;
  const call = (path: string, init: { headers: Record<string, string>; body: Uint8Array }) =>
    entry(new Request(`${origin}${RPC}${path}`, { method: "POST", ...init }), env, ctx);
  const execBytes = (session: string, i: number, harness = "") =>
    toBinary(ExecRequestSchema, create(ExecRequestSchema, { session, harness, inputs: [userText(`loop ${i}`)] }));
  const drained = async (r: Response, least: number) => {
    const bytes = (await r.arrayBuffer()).byteLength;
    if (r.status !== 200 || bytes < least) throw new Error(`bench loop: ${kind} answered ${r.status} with ${bytes} bytes`);
  };
  /** An Exec through the Worker, as a Connect streaming client sends it, answered with at least `least` bytes. */
  const exec = async (session: string, i: number, least: number) =>
    drained(await call("Exec", { headers: STREAM, body: envelopeFrame(0, execBytes(session, i)) }), least);
  const bench = env.BENCH_OBJECT.get(env.BENCH_OBJECT.idFromName("bench-loop"));
  // A new object's durable writes cost more until its storage has grown (docs/platform.md P22):
  // the five-row floors get a new object as often as the turns get a new session.
  let floor = bench;
  const object = (session: string) => sessionStub(env, DEFAULT_TENANT, session);
  const kinds: Record<string, LoopKind> = {
    health: { run: async () => drained(await entry(new Request(`${origin}/healthz`), env, ctx), 1) },
    "worker-refuses": { run: (i) => exec("not a uid", i, 1) },
    "object-refuses": { run: (i) => exec("sess-000000000000000000000000", i, 1) },
    "object-noop": { run: () => bench.noop() },
    five: { renewed: true, run: () => floor.five() },
    "five-bytes": { renewed: true, run: () => floor.fiveAnswering(ECHO_ANSWER_BYTES) },
    "unknown-harness": {
      harness: "echo",
      run: async (i, session) => {
        const start = await object(session).exec(execBytes(session, i, "not-served"), "", true, true);
        if (start.ok) throw new Error("bench loop: a harness that is not served ran a turn");
      },
    },
    "object-echo": {
      harness: "echo",
      run: async (i, session) => {
        const start = await object(session).exec(execBytes(session, i), "", true, true);
        if (!start.ok || !("whole" in start)) throw new Error(`bench loop: the object answered ${start.ok ? "a stream" : start.message}`);
      },
    },
    echo: { harness: "echo", run: (i, session) => exec(session, i, 200) },
    chat: { harness: "chat", run: (i, session) => exec(session, i, 200) },
  };
  const k = kinds[kind];
  if (!k) return new Response(`unknown loop kind ${JSON.stringify(kind)}: one of ${Object.keys(kinds).join(", ")}`, { status: 400 });
  const open = async (harness: string): Promise<string> => {
    const body = toBinary(
      CreateSessionRequestSchema,
      create(CreateSessionRequestSchema, { session: { metadata: { name: "bench-loop" }, harness, model: harness === "chat" ? "echo" : "" } }),
    );
    const r = await call("CreateSession", { headers: { "content-type": "application/proto" }, body });
    if (r.status !== 200) throw new Error(`bench loop: CreateSession answered ${r.status}: ${await r.text()}`);
    return fromBinary(SessionSchema, new Uint8Array(await r.arrayBuffer())).metadata!.uid;
  };
  let session = "";
  let timedMs = 0;
  let timed = 0;
  for (let i = 0; i < n; i++) {
    const first = (k.harness !== undefined || k.renewed === true) && i % LOOP_TURNS_PER_SESSION === 0;
    if (first && k.harness !== undefined) session = await open(k.harness);
    if (first && k.renewed) floor = env.BENCH_OBJECT.get(env.BENCH_OBJECT.idFromName(`bench-loop-${mintSessionUid()}`));
    // Date.now() counts milliseconds here; the sum over hundreds of requests is what is reported.
    const t = Date.now();
    await k.run(i, session);
    if (first) continue;
    timedMs += Date.now() - t;
    timed++;
  }
  return Response.json({ kind, n: timed, us: (timedMs * 1000) / Math.max(1, timed) });
}

export async function serveBench(req: Request, env: Env, entry: Entry, ctx: ExecutionContext): Promise<Response> {
  const url = new URL(req.url);
  const stub = env.BENCH_OBJECT.get(env.BENCH_OBJECT.idFromName(url.searchParams.get("object") ?? "bench"));
  const n = Number(url.searchParams.get("n") ?? "1000");
  const size = Number(url.searchParams.get("size") ?? "300");
  switch (url.pathname) {
    case "/_bench/loop":
      return loop(entry, env, ctx, req, url.searchParams.get("kind") ?? "", n);
    case "/_bench/append":
      return Response.json({ head: await stub.append(n, size) });
    case "/_bench/logs":
      return Response.json({ n: await stub.logs(n, size) });
    case "/_bench/plain":
      return Response.json({ head: await stub.plain(n, size) });
    case "/_bench/answer": {
      // The floor of a unary call answered by its object (GetSession): one call that answers `size`
      // bytes, which the Worker returns as the body.
      await req.arrayBuffer();
      const answer = await stub.answering(size);
      return new Response(answer.value, { headers: { "content-type": "application/proto" } });
    }
    case "/_bench/five":
      return Response.json({ head: await stub.five() });
    case "/_bench/five-sized": {
      // The five-row call carrying what an Exec carries: a request body the Worker reads, and an
      // answer as long as an echo turn's (the anatomy row's measure of what an Exec's own bytes cost).
      await req.arrayBuffer();
      const answer = await stub.fiveAnswering(ECHO_ANSWER_BYTES);
      return new Response(answer.whole, { headers: { "content-type": "application/connect+proto" } });
    }
    case "/_bench/relay": {
      // The floor of a streamed model answer (BenchObject.relay): the request's body goes to the
      // provider at `url`, whose stream comes back through the object.
      const target = url.searchParams.get("url") ?? "";
      return new Response(await stub.relay(target, await req.text()), { headers: { "content-type": "text/event-stream" } });
    }
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
