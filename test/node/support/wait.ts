/**
 * Waiting for a condition instead of sleeping for a guess: `waitFor` polls until the check holds
 * or a generous deadline passes, then fails naming what it waited for. Deadlines are long because
 * the suite runs on a busy 2-core machine where a `wrangler dev` can take seconds to answer; a
 * condition that holds returns at once, so a long deadline costs nothing when things go well.
 */

export interface WaitOptions {
  /** Give up after this many milliseconds (default 45 s: under the 60 s test timeout, so this message is the one reported). */
  timeoutMs?: number;
  /** Time between checks (default 50 ms). */
  intervalMs?: number;
}

/**
 * Resolves with the check's first truthy result; rejects with `what` once the deadline passes
 * (with the last error the check threw, if any).
 */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, opts: WaitOptions = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 45_000);
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const why = last === undefined ? "" : `; last error: ${last instanceof Error ? last.message : String(last)}`;
      throw new Error(`timed out waiting for ${what}${why}`);
    }
    await new Promise((ok) => setTimeout(ok, opts.intervalMs ?? 50));
  }
}
