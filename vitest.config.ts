import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // The same module the Lambda bundles alias (see infra/construct/compute.ts) and tsconfig maps.
  resolve: {
    alias: { "@hourglass/handlers": fileURLToPath(new URL("./functions/handlers.ts", import.meta.url)) },
  },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The integration files share one Redis, DynamoDB Local and fauxqs; each uses its own key
    // prefix, tables and queue, so they can run side by side.
    pool: "forks",
    // In CI, also a machine-readable report, from which .ci/run prints the closing tally.
    reporters: process.env.CI
      ? ["default", ["json", { outputFile: ".hourglass/test-results.json" }]]
      : ["default"],
    maxWorkers: 2,
  },
});
