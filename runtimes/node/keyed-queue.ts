/**
 * Operations on one key (a session uid) run one at a time, in call order; different keys proceed
 * in parallel. An operation may hold several keys at once (a fork holds the parent and every
 * child): it waits for everything queued on any of them before, so two operations never interleave
 * on a shared key and waiting never forms a cycle.
 * @internal Used by runtimes/pod/incarnations.ts and runtimes/substrate/actors.ts.
 */
export interface KeyedQueue {
  run<T>(keys: string | readonly string[], fn: () => Promise<T>): Promise<T>;
}

export function createKeyedQueue(): KeyedQueue {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run<T>(keys: string | readonly string[], fn: () => Promise<T>): Promise<T> {
      const ks = [...new Set(typeof keys === "string" ? [keys] : keys)];
      const before = Promise.all(ks.map((k) => tails.get(k)));
      const run = before.then(fn, fn);
      const tail = run.then(
        () => undefined,
        () => undefined,
      );
      for (const k of ks) tails.set(k, tail);
      void tail.then(() => {
        for (const k of ks) if (tails.get(k) === tail) tails.delete(k);
      });
      return run;
    },
  };
}
