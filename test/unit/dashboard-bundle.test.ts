import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { dashboardAssets } from "../../shared/dashboard/assets.ts";

describe("the dashboard's bundle", () => {
  it("builds from ui/ and stays under 200 KB of script gzipped", async () => {
    const { js, css } = await dashboardAssets();
    expect(gzipSync(js).length).toBeLessThan(200_000);
    expect(css.length).toBeGreaterThan(0);
    // Everything is bundled: nothing is fetched from another host at run time.
    expect(new TextDecoder().decode(js)).not.toMatch(/\bimport\s*\(\s*["']https?:/);
  });
});
