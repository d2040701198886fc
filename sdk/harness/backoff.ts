/**
 * Reconnect delays: exponential from `initialMs`, capped at `maxMs`, with jitter (each delay is
 * drawn from the upper half of its step) so harnesses cut off together do not reconnect in lockstep.
 * @internal Used by serve.ts; tested in test/node/sdk-harness/reconnect.test.ts.
 */
export interface BackoffOptions {
  /** First delay (default 500 ms). */
  initialMs?: number;
  /** Largest delay (default 30 s). */
  maxMs?: number;
}

export interface Backoff {
  /** The next delay in milliseconds; each call doubles the step until the cap. */
  next(): number;
  /** After a connection that got as far as Welcome: start again from the first step. */
  reset(): void;
}

export function createBackoff(o: BackoffOptions = {}, random: () => number = Math.random): Backoff {
  const initial = Math.max(1, o.initialMs ?? 500);
  const max = Math.max(initial, o.maxMs ?? 30_000);
  let step = 0;
  return {
    next() {
      const ceiling = Math.min(max, initial * 2 ** Math.min(step, 30));
      step++;
      return Math.round(ceiling / 2 + random() * (ceiling / 2));
    },
    reset() {
      step = 0;
    },
  };
}
