/**
 * `agentctl tail` against the shared `wrangler dev` server, run as a subprocess: to the head in
 * replay's format, --from and --json (one LogRecord per line, as `replay --json`), and -f, which
 * keeps printing the records of later turns as they commit (docs/follow.md).
 */
import { spawn } from "node:child_process";
import { describe, expect, inject, it } from "vitest";
import { AGENTCTL, agentctl, sessionOf } from "./run-agentctl.js";
import { ROOT } from "../../../scripts/dev-server.js";

const server = inject("serverUrl");
const S = ["--server", server];

describe("agentctl tail", () => {
  it("tail: prints the journal to the head, as replay does, and exits 0", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const tail = await agentctl([...S, "tail", uid]);
    const replay = await agentctl([...S, "replay", uid]);
    expect(tail.code).toBe(0);
    expect(tail.lines).toHaveLength(5);
    expect(tail.lines).toEqual(replay.lines);
  });

  it("tail --from N --json: one LogRecord object per line from seq N, byte-identical to replay --json", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "hello"]));
    const tail = await agentctl([...S, "tail", uid, "--from", "4", "--json"]);
    const replay = await agentctl([...S, "replay", uid, "--from", "4", "--json"]);
    expect(tail.code).toBe(0);
    expect(tail.lines.map((l) => JSON.parse(l).seq)).toEqual(["4", "5"]);
    expect(tail.stdout).toBe(replay.stdout);
  });

  it("tail -f: keeps following and prints the next turn's records once as they commit", async () => {
    const uid = sessionOf(await agentctl([...S, "exec", "--input", "one"]));
    const child = spawn(process.execPath, [AGENTCTL, ...S, "tail", uid, "-f"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    const exited = new Promise<void>((ok) => child.once("close", () => ok()));
    try {
      await waitFor(() => out.split("\n").length > 5);
      await agentctl([...S, "exec", "--session", uid, "--input", "two"]);
      await waitFor(() => out.includes("seq=10"));
      const lines = out.trimEnd().split("\n");
      expect(lines.map((l) => l.split("  ")[0])).toEqual(Array.from({ length: 10 }, (_, i) => `seq=${i + 1}`));
      expect(lines[8]).toBe("seq=9  EVENT_OUTPUT  assistant: echo:two");
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  });
});

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("timed out");
}
