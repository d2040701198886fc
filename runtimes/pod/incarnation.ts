/**
 * One incarnation: the process the pod starts for one session (harness-process.ts spawns it).
 *
 *   node --import tsx runtimes/pod/incarnation.ts <module> <name>
 *   (environment: AGENTSESSIONS_TUNNEL_URL, AGENTSESSIONS_TUNNEL_TOKEN, AGENTSESSIONS_SESSION)
 *
 * It imports the harness module and serves it against the dialback (runtimes/node/dialback-serve.ts):
 * the host's tunnel URL and the one-time token minted for this session. The token works once, so
 * once the host has welcomed this process a lost connection cannot be re-established: the process
 * ends and the pod reports no incarnation (the host's next Create or Restore places a fresh one
 * with a fresh token). It reports "connected" and "ended" to the pod over IPC, and ends
 * on SIGTERM (Goodbye, a short drain, exit 0) and when the pod goes away (IPC disconnect).
 * @internal Tested through the pod in test/node/pod/.
 */
import { ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { serveDialback } from "../node/dialback-serve.js";
import { importHarness } from "../node/harness-modules.js";
import { ENV_TUNNEL_TOKEN, ENV_TUNNEL_URL, type ChildMessage } from "./child-messages.js";

/** Open executions get this long after SIGTERM; the pod escalates to SIGKILL later than this. */
const DRAIN_MS = 2_000;

const [modulePath, name] = process.argv.slice(2);
const url = process.env[ENV_TUNNEL_URL] ?? "";
const token = process.env[ENV_TUNNEL_TOKEN];
// The harness's own code has no business with the token: it is gone before the module loads.
delete process.env[ENV_TUNNEL_TOKEN];

function tell(m: ChildMessage): Promise<void> {
  return new Promise((done) => {
    if (!process.send || !process.connected) return done();
    process.send(m, undefined, {}, () => done());
  });
}

async function end(exitCode: number, reason: string, code: string): Promise<never> {
  await tell({ kind: "ended", reason, code });
  process.exit(exitCode);
}

if (!modulePath || !name || !url) {
  await end(2, "usage: incarnation.ts <module> <name>, with AGENTSESSIONS_TUNNEL_URL set", "invalid_argument");
}

let harness;
try {
  harness = await importHarness(modulePath!);
} catch (e) {
  await end(1, e instanceof Error ? e.message : String(e), "failed_precondition");
}

let serving;
try {
  serving = serveDialback({ dialback: { tunnelUrl: url, token }, harness: harness!, fallbackName: name!, drainMs: DRAIN_MS });
} catch (e) {
  const err = ConnectError.from(e);
  await end(1, err.rawMessage, codeToString(err.code));
}
serving!.connected.then(
  (connectionId) => tell({ kind: "connected", connectionId }),
  () => undefined,
);
for (const sig of ["SIGTERM", "SIGINT"] as const) process.once(sig, () => void serving!.close());
process.once("disconnect", () => void serving!.close());

const ended = await serving!.ended;
await end(ended.failed ? 1 : 0, ended.reason, ended.code);
