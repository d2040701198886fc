/**
 * conformance/: the black-box conformance suite for the agentsessions.v1 Sessions API and our Audit
 * extension on the same endpoint.
 * Cases are data in cases/*.yaml, run over real HTTP by runner.ts; known failures are listed in
 * known-failing.txt. `npm run conformance -- --url …` runs it against any host (cli.ts);
 * test/node/integration/conformance.test.ts runs it against the shared `wrangler dev`.
 */
export { loadCases, CASES_DIR, type Case, type Step, type Expect } from "./case.js";
export type { Target } from "./rpc.js";
export {
  runCase,
  runConformanceTests,
  loadKnownFailing,
  selectCases,
  KNOWN_FAILING_FILE,
  type CaseResult,
  type ConformanceResult,
  type RunOptions,
  type Status,
} from "./runner.js";
