/**
 * A harness in another language: test/fixtures/peer/echo_peer.py, written from docs/tunnel.md and
 * the .proto files alone (hand-rolled WebSocket and protobuf, standard library only), serves real
 * turns, replay, forks and concurrent streams against a real `wrangler dev`. Skipped without python3.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventKind, type LogRecord } from "../../../proto/gen/agentsessions/v1/common_pb.js";
import { ROOT, startDevServer, type DevServer } from "../../../scripts/dev-server.js";
import { SessionsClient, codeName } from "../../../sdk/client.js";

const hasPython = spawnSync("python3", ["--version"]).status === 0;
const PEER = join(ROOT, "test/fixtures/peer/echo_peer.py");

interface Peer {
  child: ChildProcess;
  connectionId: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Spawns the peer and resolves once it printed `connected <id>`. */
function startPeer(server: string): Promise<Peer> {
  const child = spawn("python3", [PEER, "--server", server, "--name", "py-echo"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  const exited = new Promise<number | null>((ok) => child.once("exit", (code) => ok(code)));
  child.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`peer not connected within 60 s; stderr: ${err}`)), 60_000);
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      const m = /^connected (\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        ok({ child, connectionId: m[1]!, stderr: () => err, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`peer exited with ${code} before connecting; stderr: ${err}`));
    });
  });
}

/** SIGTERM, then SIGKILL after 10 s; resolves with the exit code (null when killed by a signal). */
async function stopPeer(p: Peer): Promise<number | null> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return p.child.exitCode;
  p.child.kill("SIGTERM");
  const timer = setTimeout(() => p.child.kill("SIGKILL"), 10_000);
  const code = await p.exited;
  clearTimeout(timer);
  return code;
}

const kinds = (records: LogRecord[]) => records.map((r) => EventKind[r.event?.kind ?? 0]);
const TURN = ["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_MODEL_CALL", "EVENT_OUTPUT", "EVENT_END"];

describe("a Python harness over the tunnel", () => {
  let server: DevServer | undefined;
  let peer: Peer | undefined;
  let client: SessionsClient;
  let uid = "";

  beforeAll(async () => {
    if (!hasPython) return;
    server = await startDevServer();
    client = new SessionsClient({ server: server.url });
    peer = await startPeer(server.url);
  }, 120_000);

  afterAll(async () => {
    if (peer) await stopPeer(peer);
    await server?.dispose();
  }, 60_000);

  it.skipIf(!hasPython)("connects and is welcomed with a connection id", () => {
    expect(peer!.connectionId).toMatch(/\S+/);
  });

  it.skipIf(!hasPython)("runs a turn: the model call goes through the host and the journal records py-echo@1", async () => {
    const r = await client.exec({ harness: "py-echo", inputs: ["hello"] });
    uid = r.session.metadata!.uid;
    expect(kinds(r.records)).toEqual(TURN);
    expect(r.outputs).toEqual(["echo:hello"]);
    const start = r.records[0]!.event!.body;
    expect(start.case).toBe("executionStart");
    if (start.case === "executionStart") {
      expect(start.value.harness).toBe("py-echo");
      expect(start.value.harnessVersion).toBe("1");
      expect(start.value.inputCount).toBe(1n);
    }
    const call = r.records[2]!.event!.body;
    expect(call.case === "model" && call.value.model).toBe("echo");
    const end = r.records[4]!.event!.body;
    expect(end.case === "end" && end.value.state).toBe("COMPLETED");
    // One execution id on every record of the turn.
    expect(new Set(r.records.map((x) => x.event!.executionId)).size).toBe(1);
  });

  it.skipIf(!hasPython)("replays the turn from the journal through the peer, with no model calls", async () => {
    const v = await client.verify(uid, { replay: true });
    expect(v.chainOk).toBe(true);
    expect(v.replayOk).toBe(true);
    expect(v.divergence).toBe("");
    expect(v.outputs).toEqual(["echo:hello"]);
    expect(v.modelCalls).toBe(0n);
  });

  it.skipIf(!hasPython)("runs a second turn, and a fork's turn", async () => {
    const second = await client.exec({ session: uid, inputs: ["again"] });
    expect(kinds(second.records)).toEqual(TURN);
    expect(second.outputs).toEqual(["echo:again"]);

    const [child] = await client.fork(uid);
    const childUid = child!.metadata!.uid;
    expect(childUid).not.toBe(uid);
    const forked = await client.exec({ session: childUid, inputs: ["forked"] });
    expect(kinds(forked.records)).toEqual(TURN);
    expect(forked.outputs).toEqual(["echo:forked"]);

    const v = await client.verify(childUid, { replay: true });
    expect(v.chainOk && v.replayOk).toBe(true);
    expect(v.outputs).toEqual(["echo:hello", "echo:again", "echo:forked"]);
    expect(v.modelCalls).toBe(0n);
  });

  it.skipIf(!hasPython)("runs several streams at once on one connection", async () => {
    const words = ["one", "two", "three", "four"];
    const turns = await Promise.all(words.map((w) => client.exec({ harness: "py-echo", inputs: [`first ${w}`, w] })));
    expect(turns.map((t) => t.outputs)).toEqual(words.map((w) => [`echo:${w}`]));
  });

  it.skipIf(!hasPython)("exits cleanly on SIGTERM, after which py-echo is unavailable", async () => {
    expect(await stopPeer(peer!)).toBe(0);
    const err = await client.exec({ harness: "py-echo", inputs: ["anyone?"] }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err && codeName(err.code)).toBe("unavailable");
    expect(peer!.stderr()).not.toMatch(/Traceback/);
  });
});
