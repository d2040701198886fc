/**
 * A repeating task for live views: runs, waits, runs again; backs off while it fails and slows
 * down while the tab is hidden. Stopping aborts the task in flight. Used by follow.ts and the list
 * and inbox views.
 */

export interface PollOptions {
  intervalMs: number;
  /** Longest wait between attempts while failing. */
  maxBackoffMs?: number;
  onError?(e: unknown): void;
  onOk?(): void;
}

export function startPolling(task: (signal: AbortSignal) => Promise<void>, o: PollOptions): () => void {
  const ctl = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failures = 0;
  const run = async () => {
    if (ctl.signal.aborted) return;
    try {
      await task(ctl.signal);
      failures = 0;
      if (!ctl.signal.aborted) o.onOk?.();
    } catch (e) {
      if (ctl.signal.aborted) return;
      failures++;
      o.onError?.(e);
    }
    if (ctl.signal.aborted) return;
    const base = document.hidden ? Math.max(o.intervalMs, 5000) : o.intervalMs;
    const wait = failures === 0 ? base : Math.min(base * 2 ** failures, o.maxBackoffMs ?? 10_000);
    timer = setTimeout(run, wait);
  };
  timer = setTimeout(run, 0);
  return () => {
    ctl.abort();
    clearTimeout(timer);
  };
}
