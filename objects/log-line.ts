/**
 * Where the host's structured log lines go (docs/observability.md): one JSON object per line,
 * written with the console method that matches its `level` field. The method is what the platform
 * files a line under: Workers Logs' level, `wrangler tail`, and `wrangler dev --log-level` (at
 * `warn`, which the test servers use, a line written with `console.log` is not shown at all, so an
 * `error` line written that way would be hidden exactly where it is needed: docs/platform.md P19).
 */

/** The console method for a line's `level`: `error`, `warn`, `debug`, else `info`. */
export function consoleMethodOf(level: unknown): "error" | "warn" | "info" | "debug" {
  return level === "error" || level === "warn" || level === "debug" ? level : "info";
}

/** Writes one structured line (already JSON) at `level`. */
export function writeLogText(level: unknown, json: string): void {
  console[consoleMethodOf(level)](json);
}

/** Writes one structured line (an object of JSON fields) at its own `level`. */
export function writeLogLine(line: Record<string, unknown>): void {
  writeLogText(line.level, JSON.stringify(line));
}
