/**
 * For interceptors that act when a call ends (request-log.ts, faults.ts): a unary call ends when
 * its response arrives, a server stream when its last message has been yielded or it fails.
 */
import type { Interceptor } from "@connectrpc/connect";

type Response = Awaited<ReturnType<Parameters<Interceptor>[0]>>;

/**
 * Awaits `call` and reports how it ended: `ended()` on success, `ended(error)` on failure, whose
 * return value is what is thrown instead.
 */
export async function whenEnded(call: Promise<Response>, ended: (error?: unknown) => unknown): Promise<Response> {
  let res: Response;
  try {
    res = await call;
  } catch (e) {
    throw ended(e);
  }
  if (!res.stream) {
    ended();
    return res;
  }
  const inner = res.message;
  return {
    ...res,
    message: (async function* () {
      try {
        yield* inner;
      } catch (e) {
        throw ended(e);
      }
      ended();
    })(),
  };
}
