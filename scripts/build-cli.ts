/**
 * Bundles agentctl into one file, packages/sdk/dist/cli/agentctl.js (the package's bin), after
 * `tsc` has compiled the SDK (`npm run build` runs both). Loading the ~200 modules of the compiled
 * tree one by one was most of the CLI's start: `agentctl --version` took about 0.25 s, the bundle
 * about 0.16 s, where a bare `node -e 0` takes 0.05 s (docs/performance.md, verify row).
 *
 * Bundled: our code, protobuf-es, connect and ws. Left to the installed package's dependencies:
 * tsx (it registers its own loader for `harness serve` on a TypeScript file) and sql.js (it loads
 * its WebAssembly beside its own files); ws's optional native add-ons stay optional.
 * The package's tests install the packed tarball and run this bin (test/node/cli/package.test.ts).
 */
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { ROOT } from "./dev-server.js";

export const CLI_BUNDLE = join(ROOT, "packages/sdk/dist/cli/agentctl.js");

/** ws is CommonJS and requires Node's built-ins; an ES module bundle has no `require` of its own. */
export const ESM_REQUIRE_BANNER = 'import { createRequire as __agentctlRequire } from "node:module";\nconst require = __agentctlRequire(import.meta.url);';

export async function buildCli(): Promise<void> {
  await build({
    absWorkingDir: ROOT,
    entryPoints: ["cli/entry.ts"],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile: CLI_BUNDLE,
    external: ["tsx", "tsx/*", "sql.js", "bufferutil", "utf-8-validate"],
    banner: { js: ESM_REQUIRE_BANNER },
    legalComments: "none",
    logLevel: "warning",
  });
  chmodSync(CLI_BUNDLE, 0o755);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildCli();
  console.log(`wrote ${CLI_BUNDLE}`);
}
