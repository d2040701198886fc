/**
 * A progress line on stderr for commands that read a whole journal (`verify`, `export`): only
 * when stderr is a terminal, rewritten in place at most every 200 ms, and cleared when the work
 * ends, so nothing of it reaches a pipe, a file or the command's own output.
 */
import type { CommandContext } from "./command.js";

export interface Progress {
  /** `done` units of work so far, e.g. records read. */
  update(done: number): void;
  /** Clears the line (whether the work succeeded or not). */
  end(): void;
}

const EVERY_MS = 200;
const NONE: Progress = { update() {}, end() {} };

/** `label` is what is counted, e.g. "verifying: record %d"; %d is replaced by the count. */
export function createProgress(ctx: CommandContext, label: string, now: () => number = Date.now): Progress {
  if (!ctx.errIsTty) return NONE;
  let last = Number.NEGATIVE_INFINITY;
  let shown = false;
  return {
    update(done) {
      const t = now();
      if (t - last < EVERY_MS) return;
      last = t;
      shown = true;
      ctx.err.write(`\r${label.replace("%d", done.toLocaleString("en-US"))}\x1b[K`);
    },
    end() {
      if (shown) ctx.err.write("\r\x1b[K");
      shown = false;
    },
  };
}
