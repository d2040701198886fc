/**
 * Where a session's tunnel events wait for the stream that reads them. The HarnessTunnel object
 * delivers each event to the session's object, which pushes it here; a stream that is not
 * registered (finished, superseded, or from before a restart) is refused, so frames from a stale
 * placement never reach a live execution.
 */
import type { Event } from "../../proto/gen/agentsessions/v1/common_pb.js";

/** A delivered event, or the end of the stream (the harness disconnected or the host closed it). */
export type Delivery = { event: Event } | { closed: string };

class Queue {
  private _items: Delivery[] = [];
  private _waiter: ((d: Delivery) => void) | undefined;

  push(d: Delivery): void {
    if (this._waiter) {
      const w = this._waiter;
      this._waiter = undefined;
      w(d);
    } else this._items.push(d);
  }

  next(signal: AbortSignal): Promise<Delivery> {
    const ready = this._items.shift();
    if (ready) return Promise.resolve(ready);
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this._waiter = undefined;
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this._waiter = (d) => {
        signal.removeEventListener("abort", onAbort);
        resolve(d);
      };
    });
  }
}

export class StreamInbox {
  private readonly _streams = new Map<string, Queue>();

  register(stream: string): { next: (signal: AbortSignal) => Promise<Delivery> } {
    const q = new Queue();
    this._streams.set(stream, q);
    return { next: (signal) => q.next(signal) };
  }

  unregister(stream: string): void {
    this._streams.delete(stream);
  }

  /** False when no live execution reads this stream: the caller tells the harness to stop it. */
  deliver(stream: string, d: Delivery): boolean {
    const q = this._streams.get(stream);
    if (!q) return false;
    q.push(d);
    return true;
  }
}
