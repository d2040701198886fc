#!/usr/bin/env node
// agentctl's compiled entry: the bin of the published package (packages/sdk), built by
// `npm run build` into packages/sdk/dist/cli/entry.js. Plain JavaScript at run time, so it starts
// in a fraction of a second; cli/bin/agentctl.js is the same CLI run from source through tsx.
import { main } from "./main.js";

await main();
