#!/usr/bin/env node
// agentctl's bin: Node 20 cannot run TypeScript by itself, so register tsx's ESM loader first and
// then load the CLI from source. See cli/main.ts.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../main.ts");
await main();
