/**
 * `wrangler dev`'s proxy, in front of every server the node tests start, answers a POST with 503
 * "Your worker restarted mid-request" when the pooled connection it picked to workerd was closed
 * by workerd after 5 s idle (workers-sdk#14641): the Worker never saw that request, and the proxy
 * itself only sends GET and HEAD again. A deployed Worker has no such proxy in front of it. One CI
 * run failed on it (a GetSession sent while an Exec held the proxy's other connection), so the node
 * project's fetch (proxy-resend-setup.ts, a vitest setup file) sends such a request again, at most
 * twice, the way the fuzz oracle and the benches do.
 *
 * Only that answer is sent again, and only when it comes from the shared server of the node tests
 * (global-setup.ts) for a request whose body can be sent twice (none, a string or bytes); our host
 * never writes those words. No test kills or restarts the shared server: the tests that crash a
 * server start their own, and there the proxy's 503 may follow a request the Worker did see. A
 * Worker that crashed mid-request gets the same answer from the proxy, so each resend is noted in
 * the run's scratch folder, and the leak check (leak-check.ts) prints them and fails the run past
 * PROXY_RESENDS_ALLOWED: a crash that repeats fails its test anyway, one that does not shows there.
 */

/** The file, in the run's AGENTSESSIONS_TMP, that gets one line per resend. */
export const PROXY_RESENDS_FILE = "proxy-resends.log";
/** More resends than this in one run fail it: the race is rare (one run in many hit it once). */
export const PROXY_RESENDS_ALLOWED = 3;
const ATTEMPTS = 3;

const UNWRAPPED = Symbol.for("agentsessions.test.unwrappedFetch");

/** Node's own fetch, as it was before the setup file wrapped it (for tests of the wrapper). */
export function unwrappedFetch(): typeof fetch {
  return (globalThis as { [UNWRAPPED]?: typeof fetch })[UNWRAPPED] ?? globalThis.fetch;
}

/** Wraps the process's fetch (once) for requests to `server`, keeping Node's own for unwrappedFetch. */
export function installResendingFetch(server: string, note: (what: string) => void): void {
  const g = globalThis as { [UNWRAPPED]?: typeof fetch };
  if (g[UNWRAPPED]) return;
  g[UNWRAPPED] = globalThis.fetch.bind(globalThis);
  globalThis.fetch = resendingFetch(g[UNWRAPPED], note, (url) => url.startsWith(`${server}/`));
}

/** Whether an answer is `wrangler dev`'s proxy's own 503, sent when its fetch to workerd failed. */
export function isProxyRestart(status: number, text: string): boolean {
  return status === 503 && text.includes("restarted mid-request");
}

/**
 * `fetch` with the proxy's 503 sent again, for the URLs `applies` takes (all by default); `note` is
 * told of each resend.
 */
export function resendingFetch(inner: typeof fetch, note: (what: string) => void, applies: (url: string) => boolean = () => true): typeof fetch {
  return async (input, init) => {
    const body = init?.body;
    const resendable = body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array || body instanceof ArrayBuffer;
    if (!resendable || input instanceof Request || !applies(String(input))) return inner(input, init);
    for (let attempt = 1; ; attempt++) {
      const res = await inner(input, init);
      if (res.status !== 503) return res;
      // A 503 is read whole (it is a few words) and handed on as the same answer.
      const text = await res.text();
      if (attempt >= ATTEMPTS || !isProxyRestart(res.status, text)) {
        return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
      }
      note(`${init?.method ?? "GET"} ${String(input)}`);
    }
  };
}
