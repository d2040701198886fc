/**
 * The fetch the HTTP runtime's Connect transport uses. Two jobs:
 *  - `redirect: "manual"`: connect-web asks for `redirect: "error"`, which workerd refuses, and a
 *    Runtime RPC must never follow a redirect anyway (a POST with a one-time token in its body).
 *  - Turn what is not a Connect answer into a classified ConnectError before the transport sees it:
 *    a rejected fetch (unreachable), a redirect (misconfigured URL) and a non-JSON 5xx (a proxy or a
 *    crashing backend). The transport passes a thrown ConnectError through unchanged.
 * @internal Used by http-runtime.ts. Runs in workerd: no Node imports.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { RETRY_AFTER_MS_HEADER, retryAfterFromHeader } from "./http-runtime-error.js";

export function createRuntimeFetch(base: typeof globalThis.fetch): typeof globalThis.fetch {
  const f: typeof globalThis.fetch = async (input, init) => {
    let res: Response;
    try {
      res = await base(input, { ...init, redirect: "manual" });
    } catch (e) {
      // The transport turns its own timeout or the caller's cancel into DEADLINE_EXCEEDED/CANCELED.
      if (init?.signal?.aborted) throw e;
      throw new ConnectError(`unreachable: ${e instanceof Error ? e.message : String(e)}`, Code.Unavailable, undefined, undefined, e);
    }
    if (res.status >= 300 && res.status < 400) {
      await discard(res);
      const to = res.headers.get("location");
      throw new ConnectError(`answered a redirect (HTTP ${res.status}${to ? ` to ${to}` : ""}): configure the runtime's final URL`, Code.FailedPrecondition);
    }
    if (res.status >= 500 && !isJson(res.headers.get("content-type"))) {
      await discard(res);
      const metadata = new Headers();
      const after = retryAfterFromHeader(res.headers.get("retry-after"));
      if (after !== undefined) metadata.set(RETRY_AFTER_MS_HEADER, String(after));
      throw new ConnectError(`HTTP ${res.status} without a Connect error`, Code.Unavailable, metadata);
    }
    return res;
  };
  return f;
}

function isJson(contentType: string | null): boolean {
  return contentType !== null && /^application\/json\b/i.test(contentType.trim());
}

/** Frees the connection: an unread body holds it open (workerd warns about it). */
async function discard(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => undefined);
}
