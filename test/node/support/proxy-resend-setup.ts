/**
 * The node project's setup file: every fetch of a test process to the shared server goes through
 * resendingFetch (proxy-resend.ts), the SDK's default fetch included, and each resend is noted in
 * the run's scratch folder for the leak check to count.
 */
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { expect, inject } from "vitest";
import { installResendingFetch, PROXY_RESENDS_FILE } from "./proxy-resend.js";

/** Notes a resend in the run's scratch folder (a file each test process appends to). */
function noteResend(what: string): void {
  const dir = process.env.AGENTSESSIONS_TMP;
  const test = expect.getState().currentTestName ?? "";
  if (dir) appendFileSync(join(dir, PROXY_RESENDS_FILE), `${new Date().toISOString()} ${what} (${test})\n`);
}

installResendingFetch(inject("serverUrl"), noteResend);
