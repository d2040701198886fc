/**
 * The session-level suites of approvals, recovery, forks and lifecycle operations again, on
 * sessions that keep none of their journal decoded in memory (a journal cache budget of 0): every
 * operation then decides from the latest-only parse (objects/session/session-cache.ts `current`)
 * and reads records from SQLite. Each imported file registers its tests here under this budget;
 * they run under the default budget in their own files.
 */
import { expect, it } from "vitest";
import { userText } from "../../../proto/messages.js";
import { createSession, drain, execReq, setup, stateOf } from "../support/session-fixture.js";

process.env.SESSION_FIXTURE_CACHE_BYTES = "0";

it("over budget: the sessions these suites make keep no decoded journal", async () => {
  const fx = setup();
  const uid = await createSession(fx.host);
  expect((await drain(fx.host.exec(execReq({ session: uid, inputs: [userText("one")] })))).failure).toBeUndefined();
  const s = stateOf(fx.host);
  expect(s.loggedEvents()).not.toBe(s.loggedEvents());
  expect(s.parsedLog()).toMatchObject({ ok: true, latestOnly: {} });
});

await import("./approvals.test.js");
await import("./approval-recovery.test.js");
await import("./approval-selection.test.js");
await import("./approval-inspection.test.js");
await import("./fork-resume.test.js");
await import("./lifecycle.test.js");
await import("./conformance-core.test.js");
await import("./operational-faults.test.js");
await import("./memory-tier.test.js");
await import("./blob-history.test.js");
