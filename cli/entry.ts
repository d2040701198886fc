#!/usr/bin/env node
// agentctl's entry: `npm run build` compiles it into packages/sdk/dist/cli/entry.js and bundles it
// with everything it imports into packages/sdk/dist/cli/agentctl.js (scripts/build-cli.ts), the
// published package's bin, which starts in about 0.1 s; cli/bin/agentctl.js is the same CLI run
// from source through tsx.
import { main } from "./main.js";

await main();
