/**
 * `npm run conformance -- --url http://127.0.0.1:8787 [--token T] [--filter substring|tag] [--json]`
 *
 * Prints one line per case (`PASS id`, `FAIL id: reason`, `KNOWN id: reason`) and a closing count;
 * exits 1 when any case fails unexpectedly, including a known-failing case that now passes (remove
 * its line from known-failing.txt). `--json` uses Connect JSON on the wire instead of binary.
 */
import { parseArgs } from "node:util";
import { runConformanceTests, type ConformanceResult } from "./index.js";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: process.env.AGENTSESSIONS_SERVER ?? "http://127.0.0.1:8787" },
    token: { type: "string", default: process.env.AGENTSESSIONS_TOKEN },
    filter: { type: "string" },
    json: { type: "boolean", default: false },
  },
});

function line(r: ConformanceResult): string {
  switch (r.status) {
    case "pass":
      return `PASS ${r.id}`;
    case "fail":
      return `FAIL ${r.id}: ${r.reason}`;
    case "known":
      return `KNOWN ${r.id}: ${r.knownReason}`;
    case "fixed":
      return `FAIL ${r.id}: passes but is listed in known-failing.txt (${r.knownReason}); remove its line`;
  }
}

try {
  // One clear line instead of every case failing with "fetch failed"; any HTTP answer will do.
  await fetch(values.url!, { method: "HEAD" }).catch((e: unknown) => {
    throw new Error(`cannot reach ${values.url}: ${e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e)}`);
  });
  const results = await runConformanceTests({ url: values.url!, ...(values.token ? { token: values.token } : {}), json: values.json }, values.filter, {
    onResult: (r) => console.log(line(r)),
  });
  const passed = results.filter((r) => r.status === "pass").length;
  const failed = results.filter((r) => r.status === "fail" || r.status === "fixed").length;
  const known = results.filter((r) => r.status === "known").length;
  console.log(`${passed} passed, ${failed} failed${known ? `, ${known} known-failing` : ""}`);
  if (results.length === 0) console.log(`no case matches --filter ${values.filter}`);
  process.exitCode = failed > 0 || results.length === 0 ? 1 : 0;
} catch (e) {
  // A broken case file or an unreachable host is a failed run, not a crash with a stack trace.
  console.error(`conformance: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
}
