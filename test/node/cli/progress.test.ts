/**
 * The progress line (cli/progress.ts): drawn only on a terminal, at most every 200 ms, numbers
 * grouped for reading, and cleared at the end only when something was drawn.
 */
import { describe, expect, it } from "vitest";
import { createCommandContext } from "../../../cli/command.js";
import { createProgress } from "../../../cli/progress.js";

function context(errIsTty: boolean) {
  const err = { text: "", write: (s: string) => (err.text += s) };
  const ctx = createCommandContext({
    server: "http://127.0.0.1:1",
    token: undefined,
    json: false,
    out: { write: () => 0 },
    err,
    errIsTty,
    readStdin: async () => "",
  });
  return { ctx, err };
}

describe("progress line", () => {
  it("createProgress: on a terminal, redrawn at most every 200 ms and cleared at the end", () => {
    const { ctx, err } = context(true);
    let now = 1000;
    const p = createProgress(ctx, "verifying: record %d", () => now);
    p.update(512);
    now += 150;
    p.update(1024);
    now += 60;
    p.update(12_288);
    p.end();
    expect(err.text).toBe("\rverifying: record 512\x1b[K\rverifying: record 12,288\x1b[K\r\x1b[K");
  });

  it("createProgress: not a terminal, or nothing drawn: writes nothing", () => {
    const piped = context(false);
    const p = createProgress(piped.ctx, "verifying: record %d");
    p.update(1);
    p.end();
    expect(piped.err.text).toBe("");
    const idle = context(true);
    createProgress(idle.ctx, "exporting: record %d").end();
    expect(idle.err.text).toBe("");
  });
});
