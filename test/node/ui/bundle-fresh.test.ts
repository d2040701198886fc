/**
 * The committed UI bundle (worker/gen/ui-assets.ts) must be exactly what `npm run build:ui`
 * produces from ui/ and the modules it imports, like the generated-code check for proto/gen.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderUiAssets, UI_ASSETS_FILE } from "../../../scripts/build-ui.js";

describe("inspector bundle", () => {
  it("build:ui: worker/gen/ui-assets.ts is up to date with ui/", async () => {
    const fresh = await renderUiAssets();
    expect(readFileSync(UI_ASSETS_FILE, "utf8") === fresh, "worker/gen/ui-assets.ts is stale: run npm run build:ui").toBe(true);
  });
});
