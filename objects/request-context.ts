/**
 * The request id of the RPC a Durable Object method serves, for its log lines (BEHAVIOUR.md §6.1:
 * one Exec flow's lines share one request id). The Worker passes the id with the call; the object
 * runs the call inside `withRequestId`, and everything the call starts, including a turn that goes
 * on streaming after the method returned, reads it with `currentRequestId`. AsyncLocalStorage
 * (nodejs_compat in workerd, native in Node) keeps interleaved calls apart.
 */
import { AsyncLocalStorage } from "node:async_hooks";

const store = new AsyncLocalStorage<string>();

export function withRequestId<T>(requestId: string, f: () => T): T {
  return requestId ? store.run(requestId, f) : f();
}

/** The request id of the call being served, or "" outside one. */
export function currentRequestId(): string {
  return store.getStore() ?? "";
}
