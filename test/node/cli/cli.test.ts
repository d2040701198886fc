/**
 * agentctl against the shared `wrangler dev` server, run as a subprocess: the record format of
 * docs/behaviour.md §7.4-7.5, CAS on exec, create/get/list (all pages), replay ranges, verify, and the
 * exit statuses (2 usage, 1 failure).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromJson } from "@bufbuild/protobuf";
import { describe, expect, inject, it } from "vitest";
import { ExecUpdateSchema } from "../../../proto/gen/agentsessions/v1/session_pb.js";
import { SessionsClient } from "../../../sdk/client.js";
import { agentctl, sessionOf } from "./run-agentctl.js";

const server = inject("serverUrl");
const S = ["--server", server];

const TURN_HELLO = [
  "seq=1  EVENT_EXECUTION_START  harness=echo inputs=1",
  "seq=2  EVENT_INPUT  user: hello",
  "seq=3  EVENT_MODEL_CALL  model=echo",
  "seq=4  EVENT_OUTPUT  assistant: echo:hello",
  "seq=5  EVENT_END  state=COMPLETED",
];

describe("agentctl exec", () => {
  it("exec: prints the session, then the turn's five records ending in echo:hello", async () => {
    const r = await agentctl([...S, "exec", "--input", "hello"]);
    expect(r.code).toBe(0);
    sessionOf(r);
    expect(r.lines.slice(1)).toEqual(TURN_HELLO);
  });

  it("exec: control characters and reordering marks in a record's text print as visible escapes, never reaching the terminal", async () => {
    // A window-title escape, a screen clear, a carriage return and a right-to-left override.
    const text = "hi \x1b]0;pwned\x07 \x1b[2J\r \u202e evil \x9b tab\tok";
    const r = await agentctl([...S, "exec", "--input", text]);
    expect(r.code).toBe(0);
    const shown = "hi \\x1b]0;pwned\\x07 \\x1b[2J\\x0d \\u202e evil \\x9b tab\tok";
    expect(r.lines.slice(1)).toEqual([
      "seq=1  EVENT_EXECUTION_START  harness=echo inputs=1",
      `seq=2  EVENT_INPUT  user: ${shown}`,
      "seq=3  EVENT_MODEL_CALL  model=echo",
      `seq=4  EVENT_OUTPUT  assistant: echo:${shown}`,
      "seq=5  EVENT_END  state=COMPLETED",
    ]);
    expect(r.stdout).not.toMatch(/[\x1b\x07\r\u202e\x9b]/);
    // The record itself holds the text as sent; only its printing escapes it.
    const replayed = await agentctl([...S, "replay", "--json", sessionOf(r)]);
    expect(replayed.stdout).toContain(JSON.stringify(text).slice(1, -1));
    // A session's name the same way, in get and list.
    const project = `cli-escapes-${randomBytes(3).toString("hex")}`;
    const uid = sessionOf(await agentctl([...S, "create", "--project", project, "--name", "a\x1b[31mred"]));
    expect((await agentctl([...S, "get", uid])).lines).toContain("name           a\\x1b[31mred");
    expect((await agentctl([...S, "list", "--project", project])).lines).toEqual([expect.stringMatching(/ {2}name=a\\x1b\[31mred$/)]);
  });

  it("exec: a second turn with the right --expected-last-seq appends seq 6-10", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "exec", "--session", uid, "--input", "again", "--expected-last-seq", "5"]);
    expect(r.code).toBe(0);
    expect(r.lines[0]).toBe(`session ${uid}`);
    expect(r.lines.slice(1).map((l) => l.split("  ")[0])).toEqual(["seq=6", "seq=7", "seq=8", "seq=9", "seq=10"]);
    expect(r.lines[4]).toBe("seq=9  EVENT_OUTPUT  assistant: echo:again");
  });

  it("exec: a wrong --expected-last-seq exits 1 with aborted and writes nothing", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "exec", "--session", uid, "--input", "again", "--expected-last-seq", "3"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl exec: aborted: /);
    expect(r.lines.filter((l) => l.startsWith("seq="))).toEqual([]);
    const get = await agentctl([...S, "get", uid]);
    expect(get.lines).toContain("last_seq       5");
  });

  it("exec --config-file: the bytes reach the start marker, shown only by size", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentctl-config-"));
    try {
      const file = join(dir, "config.bin");
      writeFileSync(file, "opaque-config-bytes");
      const r = await agentctl([...S, "exec", "--input", "hello", "--config-file", file]);
      expect(r.code).toBe(0);
      expect(r.lines[1]).toBe("seq=1  EVENT_EXECUTION_START  harness=echo inputs=1 config=19B");
      expect(r.stdout + r.stderr).not.toContain("opaque-config-bytes");
      const missing = await agentctl([...S, "exec", "--input", "hello", "--config-file", join(dir, "nope")]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/cannot read --config-file .*: ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("exec --json: one ExecUpdate per line, session frame first", async () => {
    const r = await agentctl([...S, "--json", "exec", "--input", "hello"]);
    expect(r.code).toBe(0);
    const updates = r.lines.map((l) => fromJson(ExecUpdateSchema, JSON.parse(l)));
    expect(updates[0]?.update.case).toBe("session");
    const records = updates.flatMap((u) => (u.update.case === "record" ? [u.update.value] : []));
    expect(records.map((x) => x.seq)).toEqual([1n, 2n, 3n, 4n, 5n]);
  });
});

describe("agentctl create, get, list", () => {
  it("create: prints the uid; get shows the summary with states unprefixed", async () => {
    const c = await agentctl([...S, "create", "--project", "cli-get", "--name", "triage", "--model", "echo-1", "--label", "team=a"]);
    expect(c.code).toBe(0);
    const uid = sessionOf(c);
    const g = await agentctl([...S, "get", "--session", uid]);
    expect(g.code).toBe(0);
    expect(g.lines).toEqual([
      `uid            ${uid}`,
      "project        cli-get",
      "name           triage",
      "harness        echo",
      "last_seq       0",
      expect.stringMatching(/^exec_state {5}[A-Z]+$/),
      "compute_state  NONE",
    ]);
    const j = await agentctl([...S, "get", uid, "--json"]);
    expect(JSON.parse(j.stdout)).toMatchObject({ metadata: { uid, project: "cli-get", name: "triage" }, model: "echo-1", labels: { team: "a" } });
  });

  it("list: walks every page (5 sessions, --page-size 2)", async () => {
    const project = `cli-list-${randomBytes(4).toString("hex")}`;
    const uids: string[] = [];
    for (let i = 0; i < 5; i++) uids.push(sessionOf(await agentctl([...S, "create", "--project", project, "--name", `n${i}`])));
    // The server must really paginate at this size, or the test would prove nothing.
    const first = await new SessionsClient({ server }).raw.listSessions({ project, pageSize: 2 });
    expect(first.sessions.length).toBe(2);
    expect(first.nextPageToken).not.toBe("");

    const r = await agentctl([...S, "list", "--project", project, "--page-size", "2"]);
    expect(r.code).toBe(0);
    expect(r.lines.length).toBe(5);
    for (const line of r.lines) expect(line).toMatch(/^sess-[0-9a-f]{24} {2}last_seq=0 {2}compute=NONE {2}harness=echo {2}name=n[0-4]$/);
    expect(r.lines.map((l) => l.split("  ")[0]).sort()).toEqual([...uids].sort());
  });
});

describe("agentctl replay and verify", () => {
  it("replay --from/--to: prints just that range", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const r = await agentctl([...S, "replay", "--session", uid, "--from", "2", "--to", "4"]);
    expect(r.code).toBe(0);
    expect(r.lines).toEqual(TURN_HELLO.slice(1, 4));
    const all = await agentctl([...S, "replay", uid]);
    expect(all.lines).toEqual(TURN_HELLO);
  });

  it("verify: an untouched journal is VERIFIED with its head hash", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    await agentctl([...S, "exec", "--session", uid, "--input", "again"]);
    const r = await agentctl([...S, "verify", "--session", uid]);
    expect(r.code).toBe(0);
    expect(r.lines).toEqual([expect.stringMatching(/^VERIFIED 10 records head=[0-9a-f]{64}$/)]);
  });

  it("verify: a text that begins with a byte order mark keeps it through the host, and its journal verifies there, in agentctl and in an export", async () => {
    const client = new SessionsClient({ server });
    const text = "\ufeffsaved with its byte order mark";
    const uid = (await client.create({ name: "byte order mark" })).metadata!.uid;
    await client.exec({ session: uid, inputs: [text] });
    const said: string[] = [];
    for await (const r of client.replay(uid)) {
      const b = r.event?.body;
      const p = b?.case === "message" ? b.value.parts[0]?.part : undefined;
      if (p?.case === "text") said.push(p.value.text);
    }
    expect(said).toEqual([text, `echo:${text}`]);
    const audit = await client.verify(uid);
    expect(audit.chainOk).toBe(true);
    const local = await agentctl([...S, "verify", "--session", uid]);
    expect(local.code).toBe(0);
    expect(local.lines).toEqual([expect.stringMatching(/^VERIFIED 5 records head=[0-9a-f]{64}$/)]);
    const dir = mkdtempSync(join(tmpdir(), "agentsessions-bom-"));
    try {
      const file = join(dir, "s.sqlite");
      expect((await agentctl([...S, "export", "--session", uid, "--out", file])).code).toBe(0);
      const offline = await agentctl(["verify", "--export", file]);
      expect(offline.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("verify and export: a progress line on a terminal's stderr, cleared at the end; nothing of it on a pipe or in stdout", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const tty = await agentctl([...S, "verify", "--session", uid], { errIsTty: true });
    expect(tty.code).toBe(0);
    expect(tty.stderr).toBe("\rverifying: record 5\x1b[K\r\x1b[K");
    expect(tty.lines).toEqual([expect.stringMatching(/^VERIFIED 5 records head=/)]);
    const piped = await agentctl([...S, "verify", "--session", uid]);
    expect(piped.stderr).toBe("");
    expect(piped.stdout).toBe(tty.stdout);
    const dir = mkdtempSync(join(tmpdir(), "agentsessions-progress-"));
    try {
      const out = await agentctl([...S, "export", "--session", uid, "--out", join(dir, "s.sqlite")], { errIsTty: true });
      expect(out.code).toBe(0);
      expect(out.stderr).toBe("\rexporting: record 1\x1b[K\r\x1b[K");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("verify: an unknown session exits 1 with not_found", async () => {
    const r = await agentctl([...S, "verify", "--session", "sess-000000000000000000000000"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^agentctl verify: not_found: /);
  });
});

describe("agentctl usage and connection errors", () => {
  it.each([
    [["list", "--bogus"], /unknown flag --bogus/],
    [["frobnicate"], /unknown command "frobnicate"/],
    [["exec", "--input", "x", "--expected-last-seq", "abc"], /--expected-last-seq must be a non-negative integer/],
    [["exec"], /exec needs at least one --input/],
    [["exec", "--session", ""], /exec needs at least one --input/],
    [["get"], /a session is required/],
    [["replay", "--session"], /--session needs a value/],
    [["create", "--json=yes"], /--json takes no value/],
    [[], /usage: agentctl <command>/],
  ])("usage: %j exits 2 with a usage message", async (args, message) => {
    const r = await agentctl([...S, ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(/usage: agentctl/);
    expect(r.stdout).toBe("");
  });

  it("help: --help prints the command's usage and exits 0", async () => {
    const r = await agentctl(["exec", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: agentctl exec /);
    expect(r.stdout).toContain("--expected-last-seq N");
  });

  it("unreachable server: one line naming the server, exit 1", async () => {
    const { freePort } = await import("../../../scripts/dev-server.js");
    const url = `http://127.0.0.1:${await freePort()}`;
    for (const args of [["list"], ["exec", "--input", "hello"], ["verify", "--session", "sess-000000000000000000000000"]]) {
      const r = await agentctl(["--server", url, ...args]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`agentctl ${args[0]}: cannot reach ${url}: is the server running? (npm start, or pass --server)\n`);
    }
  });

  it("AGENTSESSIONS_SERVER: used when --server is absent", async () => {
    const r = await agentctl(["exec", "--input", "hello"], { env: { AGENTSESSIONS_SERVER: server } });
    expect(r.code).toBe(0);
    expect(r.lines.at(-2)).toBe("seq=4  EVENT_OUTPUT  assistant: echo:hello");
  });

  it("token: sent as a bearer header and never printed", async () => {
    const token = "tok-" + randomBytes(8).toString("hex");
    const seen: IncomingHttpHeaders[] = [];
    const fake = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: "unauthenticated", message: "token refused" }));
    });
    await new Promise<void>((ok) => fake.listen(0, "127.0.0.1", ok));
    try {
      const port = (fake.address() as { port: number }).port;
      const r = await agentctl(["--server", `http://127.0.0.1:${port}`, "list", "--token", token]);
      expect(r.code).toBe(1);
      expect(seen[0]?.authorization).toBe(`Bearer ${token}`);
      expect(r.stderr).toMatch(/^agentctl list: unauthenticated: token refused/);
      expect(r.stderr + r.stdout).not.toContain(token);
      const fromEnv = await agentctl(["--server", `http://127.0.0.1:${port}`, "list"], { env: { AGENTSESSIONS_TOKEN: token } });
      expect(fromEnv.code).toBe(1);
      expect(seen[1]?.authorization).toBe(`Bearer ${token}`);
    } finally {
      await new Promise((ok) => fake.close(ok));
    }
  });
});
